/*
** ops/nn.h — the deep-learning family's parameters (ops/nn.c): the geometry of an OPF_NN op
** travels as a 1 x NN_NPRM matrix, made by the builtins (builtins_nn.c) and read by op_nn.
*/
#ifndef MLS_OPS_NN_H
#define MLS_OPS_NN_H

/* The parameter matrix's columns: [N, C, H, W, F, R, S, sh, sw, ph, pw] (images N x C x H x W,
** F filters of R x S (pooling: F = C), strides sh, sw, paddings ph, pw). op_nn itself is
** declared in ops.h with the other eager entry points. */
enum { NN_NPRM = 11 };

#endif

/* plot.c — figure state and rendering (cairo). Skeleton: figures are not drawn yet. */
#include "plot/plot.h"

void plot_flush(Interp *I) { (void)I; }
void plot_free(Interp *I) { (void)I; }

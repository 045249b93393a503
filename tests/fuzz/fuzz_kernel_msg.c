/*
** fuzz_kernel_msg.c — libFuzzer harness for the Jupyter kernel's message parser (wire_parse in
** src/kernel/wire.c): the frames of one message, the "<IDS|MSG>" delimiter, the HMAC check and
** the four JSON dicts, with no sockets. Input: byte 0 picks the mode, the rest is the frames,
** separated by NUL bytes:
**   mode % 3 == 0  the frames as they are, checked with the key "fuzz-key" (a forged message:
**                  it must be dropped unless its signature is right)
**   mode % 3 == 1  the same, but the frame after the delimiter is replaced by the right
**                  signature of the four after it, so the JSON parsing is reached
**   mode % 3 == 2  checked by an unsigned wire (the connection file's key "")
** Checked, beyond ASan and UBSan: a message is accepted only with the right signature (mode 0
** never, unless its frame is that signature), and an accepted one has four JSON objects and a
** string msg_type; then its text goes through wire_text as the kernel's replies would.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel/wire.h"

#define MAXF 64

static void need(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_kernel_msg: %s\n", what);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Wire signed_wire, open_wire;
  static int ready;
  if (!ready) {
    char err[128];
    need(wire_init(&signed_wire, "fuzz-key", "hmac-sha256", err, sizeof err), "wire_init");
    need(wire_init(&open_wire, "", "", err, sizeof err), "wire_init without a key");
    ready = 1;
  }
  if (size < 1 || size > (1 << 20)) return 0;
  int mode = data[0] % 3;
  /* a private copy: the frames point into it (and mode 1 rewrites a signature) */
  size_t n = size - 1;
  char *buf = malloc(n + 65 * MAXF + 1);
  if (!buf) return 0;
  memcpy(buf, data + 1, n);
  const char *frames[MAXF];
  size_t lens[MAXF];
  int nf = 0;
  size_t start = 0;
  for (size_t i = 0; i <= n && nf < MAXF; i++)
    if (i == n || buf[i] == '\0') {
      frames[nf] = buf + start;
      lens[nf] = i - start;
      nf++;
      start = i + 1;
    }
  int d = 0;
  while (d < nf && !(lens[d] == 9 && !memcmp(frames[d], "<IDS|MSG>", 9))) d++;
  char good[65] = "";
  bool framed = d < nf && nf - d >= 6;
  const Wire *w = mode == 2 ? &open_wire : &signed_wire;
  if (framed) {
    wire_sign(w, frames + d + 2, lens + d + 2, good);
    if (mode == 1) {                            /* the signature of the parts, in spare room */
      char *sig = buf + n + 1;
      memcpy(sig, good, 64);
      frames[d + 1] = sig;
      lens[d + 1] = strlen(good);
    }
  }
  WireMsg m;
  const char *why = NULL;
  int rc = wire_parse(w, frames, lens, nf, &m, &why);
  if (rc == 0) {
    need(framed, "accepted without a delimiter and six frames");
    need(lens[d + 1] == strlen(good) && !memcmp(frames[d + 1], good, lens[d + 1]), "accepted a wrong signature");
    need(json_is_object(m.header) && json_is_object(m.parent) && json_is_object(m.metadata) &&
         json_is_object(m.content), "accepted a part that is not an object");
    const char *type = json_string_value(json_object_get(m.header, "msg_type"));
    need(type != NULL, "accepted a message without msg_type");
    need(m.nids == d, "the identities are not the frames before the delimiter");
    for (int i = 0; i < m.nids; i++) need(m.idlen[i] == lens[i] && (!lens[i] || !memcmp(m.ids[i], frames[i], lens[i])), "an identity differs");
    const char *code = json_string_value(json_object_get(m.content, "code"));
    json_t *t = wire_text(code ? code : type, strlen(code ? code : type));
    need(json_is_string(t), "wire_text gave no string");
    char *dump = json_dumps(t, JSON_COMPACT | JSON_ENCODE_ANY);
    need(dump != NULL, "wire_text gave text jansson cannot write");
    free(dump);
    json_decref(t);
    wire_msg_free(&m);
  } else {
    need(why != NULL && *why, "a dropped message without a reason");
    need(m.header == NULL && m.content == NULL && m.nids == 0, "a dropped message left parts behind");
  }
  free(buf);
  return 0;
}

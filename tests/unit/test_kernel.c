/*
** test_kernel.c — unit tests of the Jupyter kernel's pieces (src/kernel/) that the jupyter_client
** test cannot reach: the I->display hook (plots) as signed display_data on iopub, print streamed
** from I->out, the wire helpers (base64, UTF-8 repair) and bad connection files.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <jansson.h>
#include <zmq.h>
#include "diag.h"
#include "interp/interp.h"
#include "kernel/kernel.h"
#include "kernel/wire.h"

#define KEY "unit-test-key"

typedef struct Fix {
  char dir[64], conn[128];
  Interp *I;
  Kernel *K;
  void *zctx, *sub;
} Fix;

/* A kernel on ipc sockets in a fresh directory (no TCP ports to collide), and a SUB socket on
** its iopub. */
static int setup(void **state) {
  Fix *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/mls-kernel-unit.XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  snprintf(f->conn, sizeof f->conn, "%s/conn.json", f->dir);
  FILE *c = fopen(f->conn, "w");
  fprintf(c, "{\"transport\": \"ipc\", \"ip\": \"%s/k\", \"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3,"
             " \"control_port\": 4, \"hb_port\": 5, \"key\": \"" KEY "\", \"signature_scheme\": \"hmac-sha256\"}\n", f->dir);
  fclose(c);
  f->I = interp_new();
  char err[256];
  f->K = kernel_open(f->I, f->conn, err, sizeof err);
  if (!f->K) { fprintf(stderr, "kernel_open: %s\n", err); return -1; }
  f->zctx = zmq_ctx_new();
  f->sub = zmq_socket(f->zctx, ZMQ_SUB);
  char ep[128];
  snprintf(ep, sizeof ep, "ipc://%s/k-2", f->dir);
  zmq_connect(f->sub, ep);
  zmq_setsockopt(f->sub, ZMQ_SUBSCRIBE, "", 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  Fix *f = *state;
  int linger = 0;
  zmq_setsockopt(f->sub, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(f->sub);
  zmq_ctx_term(f->zctx);
  kernel_close(f->K);
  interp_free(f->I);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
  if (system(cmd) != 0) return -1;
  free(f);
  return 0;
}

/* One multipart message: up to 8 frames, each NUL-terminated. */
typedef struct Frames { int n; char *p[8]; size_t len[8]; } Frames;

static void frames_free(Frames *fr) {
  for (int i = 0; i < fr->n; i++) free(fr->p[i]);
  fr->n = 0;
}

static bool recv_frames(void *sock, int timeout_ms, Frames *fr) {
  zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
  fr->n = 0;
  if (zmq_poll(&it, 1, timeout_ms) <= 0) return false;
  int more = 1;
  while (more) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, sock, 0) < 0) { zmq_msg_close(&m); break; }
    if (fr->n < 8) {
      size_t k = zmq_msg_size(&m);
      fr->p[fr->n] = malloc(k + 1);
      memcpy(fr->p[fr->n], zmq_msg_data(&m), k);
      fr->p[fr->n][k] = '\0';
      fr->len[fr->n++] = k;
    }
    more = zmq_msg_more(&m);
    zmq_msg_close(&m);
  }
  return true;
}

/* Checks the framing and the signature (OpenSSL's one-shot HMAC, not the kernel's code);
** returns the content, parsed (the caller frees it), and the msg_type in type. */
static json_t *check_message(const Frames *fr, char *type, size_t tn) {
  assert_int_equal(fr->n, 7);                      /* topic, <IDS|MSG>, sig, 4 dicts */
  assert_string_equal(fr->p[1], "<IDS|MSG>");
  size_t total = fr->len[3] + fr->len[4] + fr->len[5] + fr->len[6];
  unsigned char *all = malloc(total), md[32];
  unsigned mdlen = 0;
  size_t o = 0;
  for (int i = 3; i < 7; i++) { memcpy(all + o, fr->p[i], fr->len[i]); o += fr->len[i]; }
  HMAC(EVP_sha256(), KEY, (int)strlen(KEY), all, total, md, &mdlen);
  free(all);
  char hex[65];
  for (unsigned i = 0; i < mdlen; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
  assert_string_equal(fr->p[2], hex);
  json_t *h = json_loads(fr->p[3], 0, NULL);
  assert_non_null(h);
  assert_string_equal(json_string_value(json_object_get(h, "version")), "5.3");
  snprintf(type, tn, "%s", json_string_value(json_object_get(h, "msg_type")));
  json_decref(h);
  json_t *c = json_loads(fr->p[6], 0, NULL);
  assert_non_null(c);
  return c;
}

/* Calls I->display until the subscription is up (ZeroMQ's slow joiner), then takes the
** display_data it published. */
static json_t *display_until_seen(Fix *f, const char *mime, const unsigned char *data, size_t n) {
  for (int tries = 0; tries < 100; tries++) {
    f->I->display(f->I, mime, data, n, f->I->display_ctx);
    Frames fr;
    if (recv_frames(f->sub, 50, &fr)) {
      char type[64];
      json_t *c = check_message(&fr, type, sizeof type);
      frames_free(&fr);
      assert_string_equal(type, "display_data");
      while (recv_frames(f->sub, 20, &fr)) frames_free(&fr);     /* repeats of the same */
      return c;
    }
  }
  fail_msg("no display_data arrived on iopub");
  return NULL;
}

static void test_display_png_is_base64_display_data(void **state) {
  Fix *f = *state;
  assert_non_null(f->I->display);
  static const unsigned char png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 1, 2, 0xfe, 0xff };
  json_t *c = display_until_seen(f, "image/png", png, sizeof png);
  /* base64 of those 13 bytes, by Python's base64.b64encode */
  assert_string_equal(json_string_value(json_object_get(json_object_get(c, "data"), "image/png")),
                      "iVBORw0KGgoAAQL+/w==");
  assert_true(json_is_object(json_object_get(c, "metadata")));
  json_decref(c);
}

static void test_display_svg_is_text(void **state) {
  Fix *f = *state;
  const char *svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"/>";
  json_t *c = display_until_seen(f, "image/svg+xml", (const unsigned char *)svg, strlen(svg));
  assert_string_equal(json_string_value(json_object_get(json_object_get(c, "data"), "image/svg+xml")), svg);
  json_decref(c);
}

/* print() writes to I->out, which the kernel streams to iopub line by line. */
static void test_print_streams(void **state) {
  Fix *f = *state;
  Frames fr;
  bool got = false;
  for (int tries = 0; tries < 100 && !got; tries++) {
    Source *src = source_new("t.mls", "print(6 * 7)", 12);
    assert_int_equal(interp_run_source(f->I, src, false), 0);
    source_release(src);
    got = recv_frames(f->sub, 50, &fr);
  }
  assert_true(got);
  char type[64];
  json_t *c = check_message(&fr, type, sizeof type);
  frames_free(&fr);
  while (recv_frames(f->sub, 20, &fr)) frames_free(&fr);
  assert_string_equal(type, "stream");
  assert_string_equal(json_string_value(json_object_get(c, "name")), "stdout");
  assert_string_equal(json_string_value(json_object_get(c, "text")), "42\n");
  json_decref(c);
}

static void test_base64(void **state) {
  (void)state;
  char *s = wire_base64((const unsigned char *)"ab", 2);
  assert_string_equal(s, "YWI=");
  free(s);
  s = wire_base64((const unsigned char *)"", 0);
  assert_string_equal(s, "");
  free(s);
}

static void test_text_repairs_utf8(void **state) {
  (void)state;
  json_t *j = wire_text("a\xff" "b\xc3\xa9", 5);      /* a bad byte, then a valid é */
  assert_string_equal(json_string_value(j), "a\xef\xbf\xbd" "b\xc3\xa9");
  json_decref(j);
  j = wire_text("x\0y", 3);                          /* NUL is not kept inside JSON text */
  assert_string_equal(json_string_value(j), "x\xef\xbf\xbdy");
  json_decref(j);
}

static void test_bad_connection_files(void **state) {
  (void)state;
  char err[256] = "";
  Interp *I = interp_new();
  assert_null(kernel_open(I, "/nonexistent/conn.json", err, sizeof err));
  assert_non_null(strstr(err, "/nonexistent/conn.json"));
  char path[] = "/tmp/mls-kernel-conn.XXXXXX";
  int fd = mkstemp(path);
  const char *bad = "{\"transport\": \"tcp\", \"ip\": \"127.0.0.1\", \"shell_port\": 1, \"key\": \"k\","
                    " \"signature_scheme\": \"hmac-md5\"}";
  assert_int_equal(write(fd, bad, strlen(bad)), (int)strlen(bad));
  close(fd);
  assert_null(kernel_open(I, path, err, sizeof err));
  assert_non_null(strstr(err, "hmac-md5"));
  fd = open(path, O_WRONLY | O_TRUNC);
  const char *noport = "{\"transport\": \"tcp\", \"ip\": \"127.0.0.1\", \"key\": \"k\"}";
  assert_int_equal(write(fd, noport, strlen(noport)), (int)strlen(noport));
  close(fd);
  assert_null(kernel_open(I, path, err, sizeof err));
  assert_non_null(strstr(err, "port"));
  unlink(path);
  assert_true(I->out == stdout);                    /* a failed open leaves I as it was */
  interp_free(I);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_display_png_is_base64_display_data, setup, teardown),
    cmocka_unit_test_setup_teardown(test_display_svg_is_text, setup, teardown),
    cmocka_unit_test_setup_teardown(test_print_streams, setup, teardown),
    cmocka_unit_test(test_base64),
    cmocka_unit_test(test_text_repairs_utf8),
    cmocka_unit_test(test_bad_connection_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
** wire.c — framing, signing and checking of Jupyter messages (docs/jupyter.md): identities,
** "<IDS|MSG>", the hex HMAC-SHA256 signature, header, parent_header, metadata, content.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <zmq.h>
#include "kernel/wire.h"

static const char delim[] = "<IDS|MSG>";

bool wire_init(Wire *w, const char *key, const char *scheme, char *err, size_t errn) {
  memset(w, 0, sizeof *w);
  wire_new_id(w->session);
  if (!key) key = "";
  if (scheme && *scheme && strcmp(scheme, "hmac-sha256") != 0) {
    snprintf(err, errn, "signature_scheme '%s' is not supported (only hmac-sha256)", scheme);
    return false;
  }
  w->keylen = strlen(key);
  if (w->keylen == 0) return true;
  w->key = malloc(w->keylen);
  if (!w->key) { snprintf(err, errn, "out of memory"); return false; }
  memcpy(w->key, key, w->keylen);
  w->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  if (!w->mac) { snprintf(err, errn, "OpenSSL has no HMAC"); wire_free(w); return false; }
  return true;
}

void wire_free(Wire *w) {
  if (w->key) OPENSSL_cleanse(w->key, w->keylen);
  free(w->key);
  EVP_MAC_free(w->mac);
  memset(w, 0, sizeof *w);
}

void wire_sign(const Wire *w, const char *const parts[4], const size_t lens[4], char out[65]) {
  out[0] = '\0';
  if (!w->keylen) return;
  EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(w->mac);
  unsigned char md[32];
  size_t mdlen = 0;
  OSSL_PARAM params[] = {
    OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
    OSSL_PARAM_construct_end()
  };
  bool ok = ctx && EVP_MAC_init(ctx, w->key, w->keylen, params);
  for (int i = 0; ok && i < 4; i++) ok = EVP_MAC_update(ctx, (const unsigned char *)parts[i], lens[i]);
  ok = ok && EVP_MAC_final(ctx, md, &mdlen, sizeof md) && mdlen == 32;
  EVP_MAC_CTX_free(ctx);
  if (!ok) return;                 /* an empty signature: the peer rejects the message */
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

void wire_new_id(char out[33]) {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    srand((unsigned)(tv.tv_sec ^ tv.tv_usec));
    for (int i = 0; i < 16; i++) b[i] = (unsigned char)rand();
  }
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

char *wire_base64(const unsigned char *data, size_t len) {
  size_t n = 4 * ((len + 2) / 3) + 1;
  char *out = malloc(n);
  if (!out) return NULL;
  size_t done = 0, o = 0;
  while (done < len) {              /* EVP_EncodeBlock takes an int: feed it in slices */
    size_t chunk = len - done > (1u << 29) ? (1u << 29) : len - done;   /* a multiple of 3 */
    o += (size_t)EVP_EncodeBlock((unsigned char *)out + o, data + done, (int)chunk);
    done += chunk;
  }
  out[o] = '\0';
  return out;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t k;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) { k = 2; min = 0x80; }
  else if ((c & 0xf0) == 0xe0) { k = 3; min = 0x800; }
  else if (c >= 0xf0 && c <= 0xf4) { k = 4; min = 0x10000; }
  else return 0;
  if (n < k) return 0;
  unsigned cp = c & (0x7f >> k);
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return k;
}

json_t *wire_text(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n && u[i] && utf8_len(u + i, n - i)) i += utf8_len(u + i, n - i);
  if (i == n) return json_stringn(s, n);
  char *t = malloc(3 * n + 1);       /* each bad byte: 3 bytes of U+FFFD */
  if (!t) return json_string("");
  size_t o = 0;
  for (i = 0; i < n;) {
    size_t k = u[i] ? utf8_len(u + i, n - i) : 0;
    if (k) { memcpy(t + o, s + i, k); o += k; i += k; }
    else { memcpy(t + o, "\xef\xbf\xbd", 3); o += 3; i++; }
  }
  json_t *j = json_stringn(t, o);
  free(t);
  return j;
}

void wire_msg_free(WireMsg *m) {
  for (int i = 0; i < m->nids; i++) free(m->ids[i]);
  json_decref(m->header);
  json_decref(m->parent);
  json_decref(m->metadata);
  json_decref(m->content);
  memset(m, 0, sizeof *m);
}

int wire_parse(const Wire *w, const char *const *frames, const size_t *lens, int n, WireMsg *m, const char **why) {
  memset(m, 0, sizeof *m);
  *why = "no <IDS|MSG> delimiter";
  int d = 0;
  while (d < n && !(lens[d] == sizeof delim - 1 && !memcmp(frames[d], delim, lens[d]))) d++;
  if (d == n) return 1;
  if (d > WIRE_MAX_IDENTS) { *why = "too many routing identities"; return 1; }
  if (n - d < 6) { *why = "fewer than four JSON parts"; return 1; }
  /* the signature first, over the frames as they came: nothing is parsed before it matches
  ** (its length is checked before the HMAC is computed) */
  *why = "bad signature";
  if (lens[d + 1] != (w->keylen ? 64 : 0)) return 1;
  char sig[65];
  const char *p4[4] = { frames[d + 2], frames[d + 3], frames[d + 4], frames[d + 5] };
  size_t l4[4] = { lens[d + 2], lens[d + 3], lens[d + 4], lens[d + 5] };
  wire_sign(w, p4, l4, sig);
  if (strlen(sig) != lens[d + 1] || CRYPTO_memcmp(sig, frames[d + 1], lens[d + 1]) != 0) return 1;
  json_t **dst[4] = { &m->header, &m->parent, &m->metadata, &m->content };
  for (int i = 0; i < 4; i++) {
    *dst[i] = json_loadb(p4[i], l4[i], 0, NULL);
    if (!json_is_object(*dst[i])) { *why = "a part is not a JSON object"; wire_msg_free(m); return 1; }
  }
  if (!json_is_string(json_object_get(m->header, "msg_type"))) { *why = "no msg_type"; wire_msg_free(m); return 1; }
  for (int i = 0; i < d; i++) {
    m->ids[i] = malloc(lens[i] ? lens[i] : 1);
    if (!m->ids[i]) { *why = "out of memory"; wire_msg_free(m); return 1; }
    if (lens[i]) memcpy(m->ids[i], frames[i], lens[i]);
    m->idlen[i] = lens[i];
    m->nids = i + 1;
  }
  return 0;
}

int wire_recv(const Wire *w, void *sock, WireMsg *m) {
  enum { MAXF = WIRE_MAX_IDENTS + 7 };         /* identities, delimiter, signature, 4 dicts, 1 more */
  zmq_msg_t f[MAXF];
  const char *frames[MAXF];
  size_t lens[MAXF];
  int n = 0;
  bool torn = false;
  memset(m, 0, sizeof *m);
  /* the frames stay in ZeroMQ's buffers (no copy: a large frame is held once); frames past
  ** MAXF (buffers, which the kernel does not use) are received and dropped */
  for (;;) {
    zmq_msg_t scratch;
    zmq_msg_t *g = n < MAXF ? &f[n] : &scratch;
    zmq_msg_init(g);
    if (zmq_msg_recv(g, sock, 0) < 0) {
      zmq_msg_close(g);
      if (n == 0) return -1;
      torn = true;                              /* a torn message: dropped */
      break;
    }
    int more = zmq_msg_more(g);
    if (n < MAXF) n++;
    else zmq_msg_close(g);
    if (!more) break;
  }
  for (int i = 0; i < n; i++) { frames[i] = zmq_msg_data(&f[i]); lens[i] = zmq_msg_size(&f[i]); }
  const char *why = "a torn message";
  int rc = torn ? 1 : wire_parse(w, frames, lens, n, m, &why);
  for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
  if (rc) fprintf(stderr, "mls kernel: dropped a message (%s)\n", why);
  return rc;
}

static json_t *new_header(const Wire *w, const char *msg_type) {
  char id[33], date[64];
  wire_new_id(id);
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  size_t k = strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(date + k, sizeof date - k, ".%06ldZ", (long)tv.tv_usec);
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session", w->session, "username", "mls",
                   "date", date, "msg_type", msg_type, "version", WIRE_PROTOCOL_VERSION);
}

static int send_frame(void *sock, const void *p, size_t n, bool more) {
  int rc;
  do rc = zmq_send(sock, p, n, more ? ZMQ_SNDMORE : 0);
  while (rc < 0 && zmq_errno() == EINTR);
  return rc < 0 ? -1 : 0;
}

int wire_send(const Wire *w, void *sock, const WireMsg *parent, const char *topic, const char *msg_type,
              json_t *content) {
  json_t *header = new_header(w, msg_type);
  json_t *ph = parent && parent->header ? json_incref(parent->header) : json_object();
  json_t *meta = json_object();
  if (!content) content = json_object();
  char *p[4] = {
    json_dumps(header, JSON_COMPACT), json_dumps(ph, JSON_COMPACT),
    json_dumps(meta, JSON_COMPACT), json_dumps(content, JSON_COMPACT)
  };
  json_decref(header);
  json_decref(ph);
  json_decref(meta);
  json_decref(content);
  int rc = -1;
  if (p[0] && p[1] && p[2] && p[3]) {
    size_t l[4] = { strlen(p[0]), strlen(p[1]), strlen(p[2]), strlen(p[3]) };
    char sig[65];
    wire_sign(w, (const char *const *)p, l, sig);
    rc = 0;
    if (parent && !topic)
      for (int i = 0; i < parent->nids && rc == 0; i++) rc = send_frame(sock, parent->ids[i], parent->idlen[i], true);
    else if (topic)
      rc = send_frame(sock, topic, strlen(topic), true);
    if (rc == 0) rc = send_frame(sock, delim, sizeof delim - 1, true);
    if (rc == 0) rc = send_frame(sock, sig, strlen(sig), true);
    for (int i = 0; i < 4 && rc == 0; i++) rc = send_frame(sock, p[i], l[i], i < 3);
  }
  for (int i = 0; i < 4; i++) free(p[i]);
  return rc;
}

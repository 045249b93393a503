/*
** wire.h — the Jupyter wire protocol (messaging v5.3): multipart ZeroMQ messages signed with
** HMAC-SHA256 (OpenSSL), their JSON parts (jansson), base64 for binary display data.
*/
#ifndef MLS_KERNEL_WIRE_H
#define MLS_KERNEL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#define WIRE_PROTOCOL_VERSION "5.3"
#define WIRE_MAX_IDENTS 8

/* One message: the routing identities that came before "<IDS|MSG>" and the four JSON dicts. */
typedef struct WireMsg {
  int nids;
  char *ids[WIRE_MAX_IDENTS];       /* malloc'ed bytes */
  size_t idlen[WIRE_MAX_IDENTS];
  json_t *header, *parent, *metadata, *content;   /* owned references */
} WireMsg;

/* The signing key and the kernel's session id. */
typedef struct Wire {
  unsigned char *key;               /* malloc'ed; keylen 0 = messages are not signed */
  size_t keylen;
  char session[33];
  void *mac;                        /* EVP_MAC (HMAC), fetched once */
} Wire;

/* key: the connection file's "key" (copied); scheme must be "hmac-sha256" or "" (no signing).
** Returns false (and a message in err) on an unknown scheme or when OpenSSL lacks HMAC. */
bool wire_init(Wire *w, const char *key, const char *scheme, char *err, size_t errn);
void wire_free(Wire *w);

/* The hex HMAC-SHA256 of the four JSON texts (out: 65 bytes); "" when unsigned. */
void wire_sign(const Wire *w, const char *const parts[4], const size_t lens[4], char out[65]);

/* The largest frame the kernel's sockets take (ZMQ_MAXMSGSIZE; --max-message-size changes it):
** a peer that sends a larger one is disconnected by ZeroMQ before it is held in memory. */
#define WIRE_MAX_MESSAGE_DEFAULT ((int64_t)256 << 20)   /* = KERNEL_MAX_MESSAGE_DEFAULT (kernel.c checks) */

/* Checks and parses one message given as its n frames (frames[i] of lens[i] bytes, borrowed),
** as wire_recv does once they have arrived: finds "<IDS|MSG>" (after at most WIRE_MAX_IDENTS
** identities), checks the signature's length and then its HMAC before anything is parsed,
** then parses the four JSON dicts. Returns 0 with *m filled (the identities copied; free with
** wire_msg_free), or 1 with *m empty and the reason in *why (static text). No sockets: the
** fuzzing harness tests/fuzz/fuzz_kernel_msg.c calls it. */
int wire_parse(const Wire *w, const char *const *frames, const size_t *lens, int n, WireMsg *m, const char **why);

/* Receives one message from sock (ROUTER). Returns 0 with *m filled (free with wire_msg_free),
** -1 when zmq_recv failed (errno set: EINTR, ETERM, EAGAIN), 1 when a message arrived but was
** malformed or its signature is wrong (it is dropped, with a line on stderr). */
int wire_recv(const Wire *w, void *sock, WireMsg *m);
void wire_msg_free(WireMsg *m);

/* Sends a message of type msg_type with content (the reference is stolen) on sock. parent may
** be NULL; its identities route the reply (shell, control), else topic is the first frame
** (iopub). Returns 0, or -1 when zmq_send failed. */
int wire_send(const Wire *w, void *sock, const WireMsg *parent, const char *topic, const char *msg_type,
              json_t *content);

/* A new random 32-hex-digit id (RAND_bytes). */
void wire_new_id(char out[33]);

/* base64 of data (no line breaks, as Jupyter wants image/png); malloc'ed, NUL-terminated. */
char *wire_base64(const unsigned char *data, size_t len);

/* A JSON string of n bytes of text: invalid UTF-8 bytes become U+FFFD, so output in any
** encoding reaches the front end. */
json_t *wire_text(const char *s, size_t n);

#endif

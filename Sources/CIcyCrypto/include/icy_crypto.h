#pragma once
#include <stddef.h>
#include <stdint.h>

// The TLS cryptography icy-sniff needs to decrypt a capture with a key log, as thin wrappers:
// the AEAD, HKDF and QUIC header protection over BoringSSL as swift-crypto vendors it
// (icy_boringssl.c), TLS 1.2's PRF and CBC suites and SHA-256 over OpenSSL's libcrypto
// (icy_crypto.c). No cipher or KDF is implemented here, only the calls and the TLS label formats.

// AEAD ciphers of TLS 1.2 and 1.3.
enum icy_aead_kind { ICY_AES_128_GCM = 1, ICY_AES_256_GCM = 2, ICY_CHACHA20_POLY1305 = 3 };

// RFC 8446 §7.1 HKDF-Expand-Label(secret, label, context, length), "tls13 " prefixed.
// sha384: 1 for SHA-384, 0 for SHA-256. Returns 1 on success.
int icy_hkdf_expand_label(int sha384, const uint8_t *secret, size_t secret_len, const char *label,
                          const uint8_t *context, size_t context_len, uint8_t *out, size_t out_len);

// RFC 5246 §5 PRF(secret, label, seed) with SHA-256 or SHA-384. Returns 1 on success.
int icy_tls12_prf(int sha384, const uint8_t *secret, size_t secret_len, const char *label,
                  const uint8_t *seed, size_t seed_len, uint8_t *out, size_t out_len);

// An AEAD decryption context for one key (opaque). NULL on failure.
void *icy_aead_new(int kind, const uint8_t *key, size_t key_len);
void icy_aead_free(void *ctx);

// Decrypts and authenticates `in` (ciphertext followed by the 16-byte tag) with a 12-byte
// nonce and `aad`; writes in_len - 16 bytes to `out` (which may equal `in`).
// Returns the plaintext length, or -1 when authentication fails.
long icy_aead_open(void *ctx, const uint8_t *nonce, const uint8_t *aad, size_t aad_len,
                   const uint8_t *in, size_t in_len, uint8_t *out);

// Encrypts (tests build records with it). Writes in_len + 16 bytes. Returns that or -1.
long icy_aead_seal(void *ctx, const uint8_t *nonce, const uint8_t *aad, size_t aad_len,
                   const uint8_t *in, size_t in_len, uint8_t *out);

// TLS 1.2 CBC suites (RFC 5246 §6.2.3.2): AES-CBC with an explicit IV per record and an HMAC,
// MAC-then-encrypt, or encrypt-then-MAC when the extension was negotiated (RFC 7366).
enum icy_mac_kind { ICY_MAC_SHA1 = 1, ICY_MAC_SHA256 = 2, ICY_MAC_SHA384 = 3 };
void *icy_cbc_new(const uint8_t *key, size_t key_len, int mac_kind, const uint8_t *mac_key, size_t mac_key_len);
void icy_cbc_free(void *ctx);
// Opens one record body (IV, ciphertext, and the MAC after it with etm): the plaintext into out
// (at least in_len bytes); its length, or -1 when the padding or the MAC does not check out.
long icy_cbc_open(void *ctx, uint64_t seq, uint8_t type, uint16_t version, int etm,
                  const uint8_t *in, size_t in_len, uint8_t *out);
// Seals one record body with the given IV (tests build records with it): into out (at least
// in_len + 16 + 48 + 16 bytes); its length.
long icy_cbc_seal(void *ctx, uint64_t seq, uint8_t type, uint16_t version, int etm, const uint8_t *iv,
                  const uint8_t *in, size_t in_len, uint8_t *out);

// RFC 5869 HKDF-Extract(salt, ikm) with SHA-256 or SHA-384 (QUIC's Initial secret, RFC 9001
// §5.2). Writes the hash's length (32 or 48) to out. Returns 1 on success.
int icy_hkdf_extract(int sha384, const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len, uint8_t *out);

// QUIC header protection (RFC 9001 §5.4): a context for one hp key. kind is an icy_aead_kind:
// AES-128/256-GCM suites use AES-ECB of the sample, ChaCha20-Poly1305 the ChaCha20 block
// function with the sample as counter and nonce. NULL on failure.
void *icy_hp_new(int kind, const uint8_t *key, size_t key_len);
void icy_hp_free(void *ctx);
// The 5-byte mask for a 16-byte sample. Returns 1 on success.
int icy_hp_mask(void *ctx, const uint8_t *sample, uint8_t *mask);

// SHA-256 of `len` bytes into `out` (32 bytes): JA4's hashes. Returns 1 on success.
int icy_sha256(const uint8_t *data, size_t len, uint8_t *out);

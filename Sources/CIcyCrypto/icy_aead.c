// The AEAD of TLS records and QUIC packets (AES-128/256-GCM, ChaCha20-Poly1305): BoringSSL's
// EVP_AEAD, as swift-crypto vendors it. Everything else in CIcyCrypto is OpenSSL's libcrypto;
// this file includes BoringSSL's header only (the two libraries' headers define the same names).
//
// Why not OpenSSL here: opening a record is the one cryptographic call per record and per packet,
// and OpenSSL 3.0 (Debian 12's 3.0.19) costs about twice BoringSSL's for the same bytes on this
// machine's CPU (AMD EPYC, Zen 3): BoringSSL's AES-GCM uses the 256-bit VAES and VPCLMULQDQ
// instructions (aes-gcm-avx2-x86_64), OpenSSL 3.0 the 128-bit AES-NI ones, and each OpenSSL open
// also looks five parameters up by name (EVP_CIPHER_CTX_set_params; openssl/openssl#20171). One
// context kept per key, one call per open, in place, both libraries in one loop over the same
// sealed buffer (docs/BENCHMARK.md, "The AEAD"): a 16 KiB AES-256-GCM record 2.4-3.3 us
// against OpenSSL's 4.5-7.2 us, a 1,250-byte AES-128-GCM packet 0.28 us against 0.57-0.75 us.
// On CPUs without VAES, BoringSSL chooses its AES-NI code, as OpenSSL does, and still skips the
// look-ups. Under valgrind (which hides VAES) the AES-NI path runs: instruction counts of a
// decrypting run no longer show the AES's real cost, only the calls around it.
//
// The boundary: swift-crypto builds BoringSSL as its target CCryptoBoringSSL, which it does not
// export as a product, with every symbol prefixed (CCryptoBoringSSL_EVP_AEAD_CTX_open). This
// target depends on swift-crypto's Crypto product, which links that target in and puts its
// headers on our include path; the header below maps BoringSSL's public EVP_AEAD names to the
// prefixed ones. The EVP_AEAD interface is BoringSSL's stable public one; a swift-crypto that
// renamed its target or prefix fails this file's build, never a run.
#include "icy_crypto.h"
#include <CCryptoBoringSSL_aead.h>

static const EVP_AEAD *aead_of(int kind) {
    switch (kind) {
    case ICY_AES_128_GCM: return EVP_aead_aes_128_gcm();
    case ICY_AES_256_GCM: return EVP_aead_aes_256_gcm();
    case ICY_CHACHA20_POLY1305: return EVP_aead_chacha20_poly1305();
    default: return NULL;
    }
}

// The context holds the key's schedule (and GHASH's powers of H), made once: each open then
// passes only its nonce. EVP_AEAD_CTX_free wipes it (BoringSSL clears what it frees).
void *icy_aead_new(int kind, const uint8_t *key, size_t key_len) {
    const EVP_AEAD *aead = aead_of(kind);
    if (!aead || key_len != EVP_AEAD_key_length(aead)) return NULL;
    return EVP_AEAD_CTX_new(aead, key, key_len, EVP_AEAD_DEFAULT_TAG_LENGTH);
}

void icy_aead_free(void *ctx) {
    if (ctx) EVP_AEAD_CTX_free(ctx);
}

// `out` may be `in` itself (BoringSSL allows exact aliasing, and refuses a partial overlap: an
// open that fails). On failure BoringSSL clears the in_len - 16 bytes at `out`.
long icy_aead_open(void *ctx, const uint8_t *nonce, const uint8_t *aad, size_t aad_len,
                   const uint8_t *in, size_t in_len, uint8_t *out) {
    if (!ctx || in_len < 16 || in_len - 16 > 0x7FFFFFFF) return -1;
    size_t out_len = 0;
    if (EVP_AEAD_CTX_open(ctx, out, &out_len, in_len - 16, nonce, 12, in, in_len, aad, aad_len) != 1) return -1;
    return (long)out_len;
}

long icy_aead_seal(void *ctx, const uint8_t *nonce, const uint8_t *aad, size_t aad_len,
                   const uint8_t *in, size_t in_len, uint8_t *out) {
    if (!ctx || in_len > 0x7FFFFFFF) return -1;
    size_t out_len = 0;
    if (EVP_AEAD_CTX_seal(ctx, out, &out_len, in_len + 16, nonce, 12, in, in_len, aad, aad_len) != 1) return -1;
    return (long)out_len;
}

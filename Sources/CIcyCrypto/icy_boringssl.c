// What icy-sniff asks of BoringSSL, as swift-crypto vendors it: the AEAD of TLS records and QUIC
// packets (AES-128/256-GCM, ChaCha20-Poly1305), HKDF (TLS 1.3's and QUIC's key schedule), and
// QUIC's header protection (one AES block, or 5 bytes of ChaCha20). What BoringSSL has no public
// interface for (TLS 1.2's PRF, its CBC suites with every MAC and encrypt-then-MAC) stays with
// OpenSSL's libcrypto in icy_crypto.c. This file includes BoringSSL's headers only (the two
// libraries' headers define the same names).
//
// Why not OpenSSL for these: opening a record is the one cryptographic call per record and per packet,
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
// headers on our include path; the headers below map BoringSSL's public names to the prefixed
// ones. EVP_AEAD, HKDF, AES_encrypt and CRYPTO_chacha_20 are BoringSSL's stable public
// interfaces; a swift-crypto that renamed its target or prefix fails this file's build, never a
// run.
#include "icy_crypto.h"
#include <CCryptoBoringSSL_aead.h>
#include <CCryptoBoringSSL_aes.h>
#include <CCryptoBoringSSL_chacha.h>
#include <CCryptoBoringSSL_digest.h>
#include <CCryptoBoringSSL_hkdf.h>
#include <CCryptoBoringSSL_mem.h>
#include <stdlib.h>
#include <string.h>

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

// HKDF (RFC 5869) with SHA-256 or SHA-384: no context, no look-up by name, nothing to set up per
// thread. Through OpenSSL 3.0 an expand took about 12,400 instructions with a context kept per
// thread, and the first one loaded OpenSSL's default provider (about 7 M instructions and 1.9 MB
// of memory), which every QUIC run paid for its Initial keys, keyless runs included.
static const EVP_MD *digest_of(int sha384) { return sha384 ? EVP_sha384() : EVP_sha256(); }

int icy_hkdf_expand_label(int sha384, const uint8_t *secret, size_t secret_len, const char *label,
                          const uint8_t *context, size_t context_len, uint8_t *out, size_t out_len) {
    // struct { uint16 length; opaque label<7..255> = "tls13 " + Label; opaque context<0..255>; } HkdfLabel
    uint8_t info[2 + 1 + 255 + 1 + 255];
    size_t label_len = strlen(label);
    if (label_len + 6 > 255 || context_len > 255 || out_len > 0xFFFF) return 0;
    size_t n = 0;
    info[n++] = (uint8_t)(out_len >> 8);
    info[n++] = (uint8_t)(out_len & 0xFF);
    info[n++] = (uint8_t)(6 + label_len);
    memcpy(info + n, "tls13 ", 6); n += 6;
    memcpy(info + n, label, label_len); n += label_len;
    info[n++] = (uint8_t)context_len;
    if (context_len) { memcpy(info + n, context, context_len); n += context_len; }
    return HKDF_expand(out, out_len, digest_of(sha384), secret, secret_len, info, n) == 1;
}

int icy_hkdf_extract(int sha384, const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len, uint8_t *out) {
    size_t out_len = 0;
    return HKDF_extract(out, &out_len, digest_of(sha384), ikm, ikm_len, salt, salt_len) == 1
        && out_len == (sha384 ? 48u : 32u);
}

// QUIC header protection (RFC 9001 §5.4): the key's AES schedule made once, or the ChaCha20 key
// kept. A mask is one block (AES_encrypt) or one ChaCha20 call: on the pipeline's thread for every
// protected packet, where OpenSSL's EVP_Cipher took about 230 instructions a packet.
typedef struct {
    int chacha;
    AES_KEY aes;
    uint8_t key[32];
} icy_hp;

void *icy_hp_new(int kind, const uint8_t *key, size_t key_len) {
    // The header protection key is as long as the packet protection key (RFC 9001 §5.1).
    const EVP_AEAD *aead = aead_of(kind);
    if (!aead || key_len != EVP_AEAD_key_length(aead)) return NULL;
    icy_hp *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->chacha = kind == ICY_CHACHA20_POLY1305;
    if (h->chacha) {
        memcpy(h->key, key, 32);
    } else if (AES_set_encrypt_key(key, (unsigned)(key_len * 8), &h->aes) != 0) {
        icy_hp_free(h);
        return NULL;
    }
    return h;
}

void icy_hp_free(void *ctx) {
    if (!ctx) return;
    OPENSSL_cleanse(ctx, sizeof(icy_hp));
    free(ctx);
}

int icy_hp_mask(void *ctx, const uint8_t *sample, uint8_t *mask) {
    icy_hp *h = ctx;
    if (!h) return 0;
    uint8_t out[16];
    if (h->chacha) {
        // RFC 9001 §5.4.4: counter = sample[0..3] (little-endian), nonce = sample[4..15]; the mask
        // is 5 bytes of keystream (ChaCha20 of 5 zero bytes).
        static const uint8_t zeros[5] = {0};
        uint32_t counter = (uint32_t)sample[0] | (uint32_t)sample[1] << 8 | (uint32_t)sample[2] << 16 | (uint32_t)sample[3] << 24;
        CRYPTO_chacha_20(out, zeros, 5, h->key, sample + 4, counter);
    } else {
        // RFC 9001 §5.4.3: AES-ECB of the 16-byte sample.
        AES_encrypt(sample, out, &h->aes);
    }
    // Not cleansed: the mask only hides header bits that are read out of it, and what a sample
    // encrypts to is no secret of the key.
    memcpy(mask, out, 5);
    return 1;
}

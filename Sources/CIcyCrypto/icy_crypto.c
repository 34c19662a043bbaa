#include "icy_crypto.h"
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <stdlib.h>
#include <string.h>

static int kdf_derive(const char *name, OSSL_PARAM *params, uint8_t *out, size_t out_len) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, name, NULL);
    if (!kdf) return 0;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (!ctx) return 0;
    int ok = EVP_KDF_derive(ctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(ctx);
    return ok;
}

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
    int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, sha384 ? "SHA384" : "SHA256", 0),
        OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, secret_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n),
        OSSL_PARAM_construct_end(),
    };
    return kdf_derive("HKDF", params, out, out_len);
}

int icy_tls12_prf(int sha384, const uint8_t *secret, size_t secret_len, const char *label,
                  const uint8_t *seed, size_t seed_len, uint8_t *out, size_t out_len) {
    size_t label_len = strlen(label);
    uint8_t full_seed[512];
    if (label_len + seed_len > sizeof full_seed) return 0;
    memcpy(full_seed, label, label_len);
    memcpy(full_seed + label_len, seed, seed_len);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, sha384 ? "SHA384" : "SHA256", 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, (void *)secret, secret_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, full_seed, label_len + seed_len),
        OSSL_PARAM_construct_end(),
    };
    return kdf_derive("TLS1-PRF", params, out, out_len);
}

typedef struct {
    EVP_CIPHER_CTX *dec;
    EVP_CIPHER_CTX *enc;
} icy_aead;

static const EVP_CIPHER *cipher_of(int kind) {
    switch (kind) {
    case ICY_AES_128_GCM: return EVP_aes_128_gcm();
    case ICY_AES_256_GCM: return EVP_aes_256_gcm();
    case ICY_CHACHA20_POLY1305: return EVP_chacha20_poly1305();
    default: return NULL;
    }
}

void *icy_aead_new(int kind, const uint8_t *key, size_t key_len) {
    const EVP_CIPHER *cipher = cipher_of(kind);
    if (!cipher || (int)key_len != EVP_CIPHER_get_key_length(cipher)) return NULL;
    icy_aead *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->dec = EVP_CIPHER_CTX_new();
    a->enc = EVP_CIPHER_CTX_new();
    if (!a->dec || !a->enc
        || EVP_DecryptInit_ex(a->dec, cipher, NULL, NULL, NULL) != 1
        || EVP_CIPHER_CTX_ctrl(a->dec, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL) != 1
        || EVP_DecryptInit_ex(a->dec, NULL, NULL, key, NULL) != 1
        || EVP_EncryptInit_ex(a->enc, cipher, NULL, NULL, NULL) != 1
        || EVP_CIPHER_CTX_ctrl(a->enc, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL) != 1
        || EVP_EncryptInit_ex(a->enc, NULL, NULL, key, NULL) != 1) {
        icy_aead_free(a);
        return NULL;
    }
    return a;
}

void icy_aead_free(void *ctx) {
    icy_aead *a = ctx;
    if (!a) return;
    EVP_CIPHER_CTX_free(a->dec);
    EVP_CIPHER_CTX_free(a->enc);
    free(a);
}

long icy_aead_open(void *ctx, const uint8_t *nonce, const uint8_t *aad, size_t aad_len,
                   const uint8_t *in, size_t in_len, uint8_t *out) {
    icy_aead *a = ctx;
    if (!a || in_len < 16 || in_len - 16 > 0x7FFFFFFF) return -1;
    size_t text_len = in_len - 16;
    int len = 0, fin = 0;
    uint8_t tag[16];
    memcpy(tag, in + text_len, 16);
    if (EVP_DecryptInit_ex(a->dec, NULL, NULL, NULL, nonce) != 1) return -1;
    if (aad_len && EVP_DecryptUpdate(a->dec, NULL, &len, aad, (int)aad_len) != 1) return -1;
    if (text_len && EVP_DecryptUpdate(a->dec, out, &len, in, (int)text_len) != 1) return -1;
    if (EVP_CIPHER_CTX_ctrl(a->dec, EVP_CTRL_AEAD_SET_TAG, 16, tag) != 1) return -1;
    if (EVP_DecryptFinal_ex(a->dec, out + (text_len ? len : 0), &fin) != 1) return -1;
    return (long)text_len;
}

long icy_aead_seal(void *ctx, const uint8_t *nonce, const uint8_t *aad, size_t aad_len,
                   const uint8_t *in, size_t in_len, uint8_t *out) {
    icy_aead *a = ctx;
    if (!a || in_len > 0x7FFFFFFF) return -1;
    int len = 0, fin = 0;
    if (EVP_EncryptInit_ex(a->enc, NULL, NULL, NULL, nonce) != 1) return -1;
    if (aad_len && EVP_EncryptUpdate(a->enc, NULL, &len, aad, (int)aad_len) != 1) return -1;
    if (in_len && EVP_EncryptUpdate(a->enc, out, &len, in, (int)in_len) != 1) return -1;
    if (EVP_EncryptFinal_ex(a->enc, out + len, &fin) != 1) return -1;
    if (EVP_CIPHER_CTX_ctrl(a->enc, EVP_CTRL_AEAD_GET_TAG, 16, out + in_len) != 1) return -1;
    return (long)in_len + 16;
}

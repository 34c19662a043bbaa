#define OPENSSL_SUPPRESS_DEPRECATED
#include "icy_crypto.h"
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

// The KDFs and ciphers, fetched from OpenSSL's default provider once per process. A fetch looks
// the algorithm up by name under the provider store's lock (OpenSSL 3 does one implicitly on
// every EVP_aes_*() init): about 7 us, paid several times per TLS connection before. Fetched
// objects are immutable and may be used from any thread; they live as long as the process.
static EVP_KDF *tls1_prf;
static EVP_CIPHER *aes_128_cbc, *aes_256_cbc;
static EVP_MAC *hmac;
static pthread_once_t fetched = PTHREAD_ONCE_INIT;

static void fetch_algorithms(void) {
    tls1_prf = EVP_KDF_fetch(NULL, "TLS1-PRF", NULL);
    aes_128_cbc = EVP_CIPHER_fetch(NULL, "AES-128-CBC", NULL);
    aes_256_cbc = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
    hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

static int kdf_derive(EVP_KDF **which, OSSL_PARAM *params, uint8_t *out, size_t out_len) {
    pthread_once(&fetched, fetch_algorithms);
    if (!*which) return 0;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(*which);
    if (!ctx) return 0;
    int ok = EVP_KDF_derive(ctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(ctx);
    return ok;
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
    return kdf_derive(&tls1_prf, params, out, out_len);
}

// A TLS 1.2 CBC suite's protection for one direction. The cipher's key schedule and the HMAC's
// keyed state are made once, as icy_aead's contexts are: each record then sets only its IV, and
// starts its MAC again from the kept key (EVP_MAC_init with a NULL key). Made per record before,
// the HMAC fetched its digest by name and keyed itself again, and the cipher expanded its key:
// per-record work beside the record's bytes.
typedef struct {
    EVP_CIPHER_CTX *dec;
    // Made on the first seal (only tests seal): a passive reader only opens.
    EVP_CIPHER_CTX *enc;
    const EVP_CIPHER *cipher;
    uint8_t key[32];
    EVP_MAC_CTX *mac;
    size_t mac_len;
} icy_cbc;

static EVP_CIPHER_CTX *cbc_context(const EVP_CIPHER *cipher, const uint8_t *key, int encrypt) {
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c) return NULL;
    if (EVP_CipherInit_ex(c, cipher, NULL, key, NULL, encrypt) != 1 || EVP_CIPHER_CTX_set_padding(c, 0) != 1) {
        EVP_CIPHER_CTX_free(c);
        return NULL;
    }
    return c;
}

void *icy_cbc_new(const uint8_t *key, size_t key_len, int mac_kind, const uint8_t *mac_key, size_t mac_key_len) {
    pthread_once(&fetched, fetch_algorithms);
    const EVP_CIPHER *cipher = key_len == 16 ? aes_128_cbc : key_len == 32 ? aes_256_cbc : NULL;
    const char *digest = mac_kind == ICY_MAC_SHA1 ? "SHA1" : mac_kind == ICY_MAC_SHA256 ? "SHA256"
                       : mac_kind == ICY_MAC_SHA384 ? "SHA384" : NULL;
    size_t mac_len = mac_kind == ICY_MAC_SHA1 ? 20 : mac_kind == ICY_MAC_SHA256 ? 32 : 48;
    if (!cipher || !hmac || !digest || mac_key_len > 48) return NULL;
    icy_cbc *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cipher = cipher;
    memcpy(c->key, key, key_len);
    c->mac_len = mac_len;
    c->dec = cbc_context(cipher, key, 0);
    c->mac = EVP_MAC_CTX_new(hmac);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
        OSSL_PARAM_construct_end(),
    };
    if (!c->dec || !c->mac || EVP_MAC_init(c->mac, mac_key, mac_key_len, params) != 1) {
        icy_cbc_free(c);
        return NULL;
    }
    return c;
}

void icy_cbc_free(void *ctx) {
    icy_cbc *c = ctx;
    if (!c) return;
    EVP_CIPHER_CTX_free(c->dec);
    EVP_CIPHER_CTX_free(c->enc);
    EVP_MAC_CTX_free(c->mac);
    OPENSSL_cleanse(c->key, sizeof c->key);
    free(c);
}

// HMAC(mac_key, seq || type || version || length || data) (RFC 5246 §6.2.3.1).
static int cbc_mac(icy_cbc *c, uint64_t seq, uint8_t type, uint16_t version, const uint8_t *data, size_t len, uint8_t *out) {
    uint8_t header[13];
    for (int k = 0; k < 8; k++) header[k] = (uint8_t)(seq >> (56 - 8 * k));
    header[8] = type;
    header[9] = (uint8_t)(version >> 8); header[10] = (uint8_t)version;
    header[11] = (uint8_t)(len >> 8); header[12] = (uint8_t)len;
    size_t out_len = 0;
    // A NULL key starts the MAC again with the key set in icy_cbc_new (OpenSSL 3.0.4 and later
    // reinitialise a provided HMAC so: openssl/openssl#18100).
    return EVP_MAC_init(c->mac, NULL, 0, NULL) == 1
        && EVP_MAC_update(c->mac, header, sizeof header) == 1
        && (len == 0 || EVP_MAC_update(c->mac, data, len) == 1)
        && EVP_MAC_final(c->mac, out, &out_len, 48) == 1 && out_len == c->mac_len;
}

// AES-CBC without padding removal: `len` bytes (a multiple of 16) after the 16-byte IV.
static int cbc_crypt(icy_cbc *c, int encrypt, const uint8_t *iv, const uint8_t *in, size_t len, uint8_t *out) {
    int n = 0, fin = 0;
    if (len > 0x7FFFFFFF) return 0;
    if (encrypt && !c->enc && !(c->enc = cbc_context(c->cipher, c->key, 1))) return 0;
    EVP_CIPHER_CTX *x = encrypt ? c->enc : c->dec;
    // The key schedule stays; only the IV is new (-1: the direction the context was made for).
    return EVP_CipherInit_ex(x, NULL, NULL, NULL, iv, -1) == 1
        && EVP_CipherUpdate(x, out, &n, in, (int)len) == 1
        && EVP_CipherFinal_ex(x, out + n, &fin) == 1
        && (size_t)(n + fin) == len;
}

long icy_cbc_open(void *ctx, uint64_t seq, uint8_t type, uint16_t version, int etm,
                  const uint8_t *in, size_t in_len, uint8_t *out) {
    icy_cbc *c = ctx;
    if (!c) return -1;
    size_t mac_len = c->mac_len;
    uint8_t mac[48];
    size_t sealed_len = etm ? (in_len >= mac_len ? in_len - mac_len : 0) : in_len;
    if (sealed_len < 32 || (sealed_len - 16) % 16 != 0) return -1;
    size_t text_len = sealed_len - 16;
    if (etm) {
        // RFC 7366: the MAC covers the IV and the ciphertext.
        if (!cbc_mac(c, seq, type, version, in, sealed_len, mac)) return -1;
        if (CRYPTO_memcmp(mac, in + sealed_len, mac_len) != 0) return -1;
    }
    if (!cbc_crypt(c, 0, in, in + 16, text_len, out)) return -1;
    size_t pad = out[text_len - 1];
    if (pad + 1 > text_len) return -1;
    for (size_t k = 0; k <= pad; k++) if (out[text_len - 1 - k] != pad) return -1;
    size_t plain_len = text_len - pad - 1;
    if (!etm) {
        if (plain_len < mac_len) return -1;
        plain_len -= mac_len;
        if (!cbc_mac(c, seq, type, version, out, plain_len, mac)) return -1;
        if (CRYPTO_memcmp(mac, out + plain_len, mac_len) != 0) return -1;
    }
    return (long)plain_len;
}

long icy_cbc_seal(void *ctx, uint64_t seq, uint8_t type, uint16_t version, int etm, const uint8_t *iv,
                  const uint8_t *in, size_t in_len, uint8_t *out) {
    icy_cbc *c = ctx;
    if (!c || in_len > 0xFFFF) return -1;
    size_t mac_len = c->mac_len;
    uint8_t *plain = malloc(in_len + mac_len + 16);
    if (!plain) return -1;
    memcpy(plain, in, in_len);
    size_t n = in_len;
    if (!etm) {
        if (!cbc_mac(c, seq, type, version, in, in_len, plain + n)) { free(plain); return -1; }
        n += mac_len;
    }
    size_t pad = 15 - (n % 16);
    for (size_t k = 0; k <= pad; k++) plain[n + k] = (uint8_t)pad;
    n += pad + 1;
    memcpy(out, iv, 16);
    int ok = cbc_crypt(c, 1, iv, plain, n, out + 16);
    free(plain);
    if (!ok) return -1;
    size_t total = 16 + n;
    if (etm) {
        if (!cbc_mac(c, seq, type, version, out, total, out + total)) return -1;
        total += mac_len;
    }
    return (long)total;
}

/* OpenSSL's SHA-256 itself, not through EVP: EVP loads the default provider on first use
 * (1.5 ms of CPU and 1.9 MB of memory), which a run without keys never needed before JA4. The
 * low-level SHA256_* functions are deprecated in OpenSSL 3 but are the same maintained code. */
int icy_sha256(const uint8_t *data, size_t len, uint8_t *out) {
    SHA256_CTX c;
    return SHA256_Init(&c) == 1 && SHA256_Update(&c, data, len) == 1 && SHA256_Final(out, &c) == 1;
}

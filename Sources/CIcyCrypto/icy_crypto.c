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
static EVP_KDF *hkdf, *tls1_prf;
static EVP_CIPHER *aes_128_cbc, *aes_256_cbc;
static EVP_MAC *hmac;
static pthread_once_t fetched = PTHREAD_ONCE_INIT;

static void fetch_algorithms(void) {
    hkdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
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

// The HKDF contexts of the calling thread, one per digest and mode, made at its first derive with
// the digest and the mode set once: a derive then sets only its key and info (or salt). Made per
// derive, a context looked its digest up by name every time (EVP_MD_fetch under the provider
// store's lock): about 3,700 of the 17,700 instructions of an expand; 30,000 of the 210,000 a
// QUIC connection's Initial keys take, keyless runs included, 68,000 per connection with a key
// log (h3.pcap of the QUIC twin, cachegrind). A context is used by one thread only (the
// pipeline's; the decryption thread's for TLS 1.3 KeyUpdate), and freed when its thread ends.
// OpenSSL 3's HKDF replaces the key, salt and info a derive sets (checked against fresh contexts
// for 1,000 random lengths; RFC 9001's and RFC 8448's vectors in the tests).
typedef struct {
    EVP_KDF_CTX *ctx[2][2];   // [sha384][extract]
} hkdf_contexts;

static pthread_key_t hkdf_key;
static pthread_once_t hkdf_key_made = PTHREAD_ONCE_INIT;
static int hkdf_key_ok;

static void hkdf_contexts_free(void *p) {
    hkdf_contexts *c = p;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) EVP_KDF_CTX_free(c->ctx[i][j]);
    free(c);
}

static void hkdf_key_make(void) { hkdf_key_ok = pthread_key_create(&hkdf_key, hkdf_contexts_free) == 0; }

static EVP_KDF_CTX *hkdf_context(int sha384, int extract) {
    pthread_once(&fetched, fetch_algorithms);
    pthread_once(&hkdf_key_made, hkdf_key_make);
    if (!hkdf || !hkdf_key_ok) return NULL;
    hkdf_contexts *c = pthread_getspecific(hkdf_key);
    if (!c) {
        if (!(c = calloc(1, sizeof *c))) return NULL;
        if (pthread_setspecific(hkdf_key, c) != 0) { free(c); return NULL; }
    }
    EVP_KDF_CTX **slot = &c->ctx[sha384 != 0][extract != 0];
    if (!*slot) {
        EVP_KDF_CTX *k = EVP_KDF_CTX_new(hkdf);
        int mode = extract ? EVP_KDF_HKDF_MODE_EXTRACT_ONLY : EVP_KDF_HKDF_MODE_EXPAND_ONLY;
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, sha384 ? "SHA384" : "SHA256", 0),
            OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
            OSSL_PARAM_construct_end(),
        };
        if (!k || EVP_KDF_CTX_set_params(k, params) != 1) { EVP_KDF_CTX_free(k); return NULL; }
        *slot = k;
    }
    return *slot;
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
    EVP_KDF_CTX *k = hkdf_context(sha384, 0);
    if (!k) return 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, secret_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n),
        OSSL_PARAM_construct_end(),
    };
    return EVP_KDF_derive(k, out, out_len, params) == 1;
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

int icy_hkdf_extract(int sha384, const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len, uint8_t *out) {
    EVP_KDF_CTX *k = hkdf_context(sha384, 1);
    if (!k) return 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len),
        OSSL_PARAM_construct_end(),
    };
    return EVP_KDF_derive(k, out, sha384 ? 48 : 32, params) == 1;
}

typedef struct {
    EVP_CIPHER_CTX *ctx;
    int chacha;
    uint8_t key[32];
} icy_hp;

void *icy_hp_new(int kind, const uint8_t *key, size_t key_len) {
    const EVP_CIPHER *cipher;
    switch (kind) {
    case ICY_AES_128_GCM: cipher = EVP_aes_128_ecb(); break;
    case ICY_AES_256_GCM: cipher = EVP_aes_256_ecb(); break;
    case ICY_CHACHA20_POLY1305: cipher = EVP_chacha20(); break;
    default: return NULL;
    }
    if ((int)key_len != EVP_CIPHER_get_key_length(cipher) || key_len > 32) return NULL;
    icy_hp *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->ctx = EVP_CIPHER_CTX_new();
    h->chacha = kind == ICY_CHACHA20_POLY1305;
    memcpy(h->key, key, key_len);
    if (!h->ctx || EVP_EncryptInit_ex(h->ctx, cipher, NULL, h->chacha ? NULL : key, NULL) != 1) {
        icy_hp_free(h);
        return NULL;
    }
    EVP_CIPHER_CTX_set_padding(h->ctx, 0);
    return h;
}

void icy_hp_free(void *ctx) {
    icy_hp *h = ctx;
    if (!h) return;
    EVP_CIPHER_CTX_free(h->ctx);
    OPENSSL_cleanse(h->key, sizeof h->key);
    free(h);
}

int icy_hp_mask(void *ctx, const uint8_t *sample, uint8_t *mask) {
    icy_hp *h = ctx;
    uint8_t out[16];
    int n = 0;
    if (!h) return 0;
    if (h->chacha) {
        // RFC 9001 §5.4.4: counter = sample[0..3] (little-endian), nonce = sample[4..15]; OpenSSL's
        // ChaCha20 takes exactly that as its 16-byte IV. The mask: 5 bytes of keystream.
        static const uint8_t zeros[5] = {0};
        if (EVP_EncryptInit_ex(h->ctx, NULL, NULL, h->key, sample) != 1) return 0;
        if (EVP_EncryptUpdate(h->ctx, out, &n, zeros, 5) != 1) return 0;
    } else {
        // AES-ECB of the one block (RFC 9001 §5.4.3) through EVP_Cipher: on a provider's cipher it
        // calls the cipher function itself (it answers the bytes written), where EVP_EncryptUpdate
        // went through its block buffering and the provider's update first.
        if (EVP_Cipher(h->ctx, out, sample, 16) != 16) return 0;
    }
    // Not cleansed: the mask only hides header bits that are read out of it, and what a sample
    // encrypts to is no secret of the key.
    memcpy(mask, out, 5);
    return 1;
}

/* OpenSSL's SHA-256 itself, not through EVP: EVP loads the default provider on first use
 * (1.5 ms of CPU and 1.9 MB of memory), which a run without keys never needed before JA4. The
 * low-level SHA256_* functions are deprecated in OpenSSL 3 but are the same maintained code. */
int icy_sha256(const uint8_t *data, size_t len, uint8_t *out) {
    SHA256_CTX c;
    return SHA256_Init(&c) == 1 && SHA256_Update(&c, data, len) == 1 && SHA256_Final(out, &c) == 1;
}

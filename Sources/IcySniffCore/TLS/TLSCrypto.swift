import CIcyCrypto

/// What decryption needs to know of a cipher suite: the AEAD suites of TLS 1.2 and 1.3, and
/// TLS 1.2's AES-CBC suites with an HMAC (`cbcMAC` set; `aead` then only says the key length).
struct TLSCipherParameters {
    enum AEAD { case aes128gcm, aes256gcm, chacha20poly1305 }
    /// The HMAC of a CBC suite: its hash and length (RFC 5246 §6.2.3.2).
    enum MAC {
        case sha1, sha256, sha384
        var length: Int { self == .sha1 ? 20 : self == .sha256 ? 32 : 48 }
        var kind: Int32 {
            switch self {
            case .sha1: return Int32(ICY_MAC_SHA1.rawValue)
            case .sha256: return Int32(ICY_MAC_SHA256.rawValue)
            case .sha384: return Int32(ICY_MAC_SHA384.rawValue)
            }
        }
    }
    var aead: AEAD
    /// The hash of the suite's PRF / HKDF: SHA-384 or SHA-256.
    var sha384: Bool
    /// A CBC suite's MAC (nil: an AEAD suite).
    var cbcMAC: MAC? = nil

    var keyLength: Int { aead == .aes128gcm ? 16 : 32 }
    var hashLength: Int { sha384 ? 48 : 32 }
    /// TLS 1.2 GCM: a 4-byte implicit IV and an 8-byte explicit nonce in every record (RFC 5288);
    /// ChaCha20-Poly1305 and TLS 1.3: a 12-byte IV xor-ed with the sequence number.
    var tls12ImplicitIVLength: Int { aead == .chacha20poly1305 ? 12 : 4 }

    /// What a protected record adds to its plaintext at least (a lost record's plaintext is
    /// estimated with it): the AEAD tag, and TLS 1.3's content type or TLS 1.2 GCM's explicit
    /// nonce; a CBC record's IV, MAC and one byte of padding.
    func recordOverhead(tls13: Bool) -> Int {
        if let mac = cbcMAC { return 16 + mac.length + 1 }
        return 16 + (tls13 ? 1 : (tls12ImplicitIVLength == 4 ? 8 : 0))
    }

    init?(suite: UInt16) {
        switch suite {
        case 0x1301: self.init(aead: .aes128gcm, sha384: false)
        case 0x1302: self.init(aead: .aes256gcm, sha384: true)
        case 0x1303: self.init(aead: .chacha20poly1305, sha384: false)
        case 0xC02B, 0xC02F, 0x009C, 0x009E: self.init(aead: .aes128gcm, sha384: false)
        case 0xC02C, 0xC030, 0x009D, 0x009F: self.init(aead: .aes256gcm, sha384: true)
        case 0xCCA8, 0xCCA9, 0xCCAA: self.init(aead: .chacha20poly1305, sha384: false)
        // AES-CBC with HMAC (TLS 1.2; RSA, ECDHE_RSA and ECDHE_ECDSA key exchange).
        case 0x002F, 0xC009, 0xC013: self.init(aead: .aes128gcm, sha384: false); cbcMAC = .sha1
        case 0x0035, 0xC00A, 0xC014: self.init(aead: .aes256gcm, sha384: false); cbcMAC = .sha1
        case 0x003C, 0xC023, 0xC027: self.init(aead: .aes128gcm, sha384: false); cbcMAC = .sha256
        case 0x003D: self.init(aead: .aes256gcm, sha384: false); cbcMAC = .sha256
        case 0xC024, 0xC028: self.init(aead: .aes256gcm, sha384: true); cbcMAC = .sha384
        default: return nil
        }
    }

    init(aead: AEAD, sha384: Bool) {
        self.aead = aead
        self.sha384 = sha384
    }

    var kind: Int32 {
        switch aead {
        case .aes128gcm: return Int32(ICY_AES_128_GCM.rawValue)
        case .aes256gcm: return Int32(ICY_AES_256_GCM.rawValue)
        case .chacha20poly1305: return Int32(ICY_CHACHA20_POLY1305.rawValue)
        }
    }
}

/// The labels a TLS 1.3 traffic secret is expanded with into the keys that protect what it
/// covers: TLS records (RFC 8446 §7.3: `key`, `iv`; KeyUpdate's `traffic upd`, §7.2) or QUIC
/// packets (RFC 9001 §5.1: the version's prefix before `key`, `iv`, `hp`; key updates' `ku`, §6.1).
/// The one place where the two protocols' key schedules differ.
struct TrafficKeyLabels: Sendable {
    let key: String
    let iv: String
    /// The header-protection key's label; nil: records have no header protection.
    let headerProtection: String?
    /// The label that makes the next generation's secret.
    let update: String

    static let tls13 = TrafficKeyLabels(key: "key", iv: "iv", headerProtection: nil, update: "traffic upd")

    /// QUIC's, with the version's prefix ("quic " for v1 and drafts, "quicv2 " for v2).
    static func quic(prefix: String) -> TrafficKeyLabels {
        TrafficKeyLabels(key: prefix + "key", iv: prefix + "iv", headerProtection: prefix + "hp", update: prefix + "ku")
    }
}

/// The keys of one traffic secret (TLS 1.3 or QUIC): AEAD key, IV, and (QUIC) the
/// header-protection key, expanded with a label set.
struct TrafficKeys {
    let key: [UInt8]
    let iv: [UInt8]
    let headerProtection: [UInt8]?

    /// `withHeaderProtection` false: a QUIC key update, which keeps the previous phase's key.
    init?(secret: [UInt8], cipher: TLSCipherParameters, labels: TrafficKeyLabels, withHeaderProtection: Bool = true) {
        guard let key = TLSKeys.expandLabel(secret, labels.key, length: cipher.keyLength, sha384: cipher.sha384),
              let iv = TLSKeys.expandLabel(secret, labels.iv, length: 12, sha384: cipher.sha384) else { return nil }
        self.key = key
        self.iv = iv
        if withHeaderProtection, let hp = labels.headerProtection {
            guard let hpKey = TLSKeys.expandLabel(secret, hp, length: cipher.keyLength, sha384: cipher.sha384) else { return nil }
            headerProtection = hpKey
        } else {
            headerProtection = nil
        }
    }

    /// The next generation's secret (TLS KeyUpdate, QUIC key update).
    static func nextSecret(_ secret: [UInt8], cipher: TLSCipherParameters, labels: TrafficKeyLabels) -> [UInt8]? {
        TLSKeys.expandLabel(secret, labels.update, length: cipher.hashLength, sha384: cipher.sha384)
    }
}

/// The key derivations of TLS, through OpenSSL's KDFs.
enum TLSKeys {
    /// RFC 8446 §7.1 HKDF-Expand-Label.
    static func expandLabel(_ secret: [UInt8], _ label: String, context: [UInt8] = [], length: Int, sha384: Bool) -> [UInt8]? {
        derive(secret, context, length) { s, c, o in
            icy_hkdf_expand_label(sha384 ? 1 : 0, s.baseAddress, s.count, label, c.baseAddress, c.count, o, length)
        }
    }

    /// RFC 5246 §5 PRF.
    static func prf(_ secret: [UInt8], _ label: String, seed: [UInt8], length: Int, sha384: Bool) -> [UInt8]? {
        derive(secret, seed, length) { s, d, o in
            icy_tls12_prf(sha384 ? 1 : 0, s.baseAddress, s.count, label, d.baseAddress, d.count, o, length)
        }
    }

    /// `length` bytes from a KDF call given the secret, a second input and the output buffer.
    private static func derive(_ secret: [UInt8], _ input: [UInt8], _ length: Int,
                               _ kdf: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeMutablePointer<UInt8>?) -> Int32) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: length)
        let ok = secret.withUnsafeBufferPointer { s in
            input.withUnsafeBufferPointer { i in out.withUnsafeMutableBufferPointer { kdf(s, i, $0.baseAddress) } }
        }
        return ok == 1 ? out : nil
    }
}

/// One direction's record protection: an AEAD key and its IV, or a CBC suite's keys, and the
/// record sequence number.
final class RecordProtection {
    private let context: OpaquePointer
    private let iv: [UInt8]
    private let tls13: Bool
    /// A CBC suite (its context is libcrypto's CBC+HMAC, not an AEAD), and whether the peers
    /// negotiated encrypt-then-MAC (RFC 7366).
    private let cbc: Bool
    private let encryptThenMAC: Bool
    private(set) var sequence: UInt64 = 0

    /// TLS 1.2 CBC suites: the write key and the MAC key.
    init?(cbcKey key: [UInt8], macKey: [UInt8], mac: TLSCipherParameters.MAC, encryptThenMAC: Bool) {
        guard let ctx = key.withUnsafeBufferPointer({ k in
            macKey.withUnsafeBufferPointer { m in icy_cbc_new(k.baseAddress, k.count, mac.kind, m.baseAddress, m.count) }
        }) else { return nil }
        self.context = OpaquePointer(ctx)
        self.iv = []
        self.tls13 = false
        self.cbc = true
        self.encryptThenMAC = encryptThenMAC
    }

    /// TLS 1.3: key and IV from a traffic secret (RFC 8446 §7.3).
    convenience init?(tls13Secret secret: [UInt8], cipher: TLSCipherParameters) {
        guard let keys = TrafficKeys(secret: secret, cipher: cipher, labels: .tls13) else { return nil }
        self.init(key: keys.key, iv: keys.iv, cipher: cipher, tls13: true)
    }

    init?(key: [UInt8], iv: [UInt8], cipher: TLSCipherParameters, tls13: Bool) {
        guard let ctx = key.withUnsafeBufferPointer({ icy_aead_new(cipher.kind, $0.baseAddress, $0.count) }) else { return nil }
        self.context = OpaquePointer(ctx)
        self.iv = iv
        self.tls13 = tls13
        self.cbc = false
        self.encryptThenMAC = false
    }

    deinit {
        if cbc { icy_cbc_free(UnsafeMutableRawPointer(context)) } else { icy_aead_free(UnsafeMutableRawPointer(context)) }
    }

    /// Runs `body` with this record's nonce and additional data, laid out on the stack (no
    /// allocation per record). The nonce: the IV xor-ed with the sequence number (TLS 1.3, and
    /// TLS 1.2 ChaCha20), or the implicit IV followed by the record's explicit nonce (TLS 1.2
    /// GCM). The additional data: TLS 1.3, the record header (RFC 8446 §5.2); TLS 1.2, the
    /// sequence number, type, version and plaintext length (RFC 5246 §6.2.3.3).
    private func withNonceAndAdditionalData<R>(explicit: UnsafeRawBufferPointer?, type: UInt8, version: UInt16, recordLength: Int,
                                               plaintextLength: Int,
                                               _ body: (_ nonce: UnsafePointer<UInt8>, _ aad: UnsafePointer<UInt8>, _ aadCount: Int) -> R) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12 + 13) { buffer in
            let nonce = buffer.baseAddress!, aad = nonce + 12
            for k in 0..<iv.count { nonce[k] = iv[k] }
            if let explicit {
                for k in 0..<explicit.count { nonce[iv.count + k] = explicit[k] }
            } else {
                for k in 0..<8 { nonce[11 - k] ^= UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(k))) }
            }
            var n = 0
            if !tls13 {
                for k in 0..<8 { aad[7 - k] = UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(k))) }
                n = 8
            }
            let length = tls13 ? recordLength : plaintextLength
            aad[n] = type
            aad[n + 1] = UInt8(version >> 8)
            aad[n + 2] = UInt8(version & 0xFF)
            aad[n + 3] = UInt8(truncatingIfNeeded: length >> 8)
            aad[n + 4] = UInt8(truncatingIfNeeded: length)
            return body(UnsafePointer(nonce), UnsafePointer(aad), n + 5)
        }
    }

    /// A record that could not be read still used a sequence number.
    func skip() { sequence &+= 1 }

    /// Opens one record's body; nil when it does not authenticate (wrong key, tampered, or not
    /// the record it was expected to be). The sequence number advances either way.
    func open(type: UInt8, version: UInt16, body: [UInt8]) -> [UInt8]? {
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, body.count), alignment: 16)
        defer { out.deallocate() }
        guard let n = open(type: type, version: version, body: body, into: out) else { return nil }
        return Array(UnsafeRawBufferPointer(rebasing: out[0..<n]))
    }

    /// `open`, into a buffer the caller owns and reuses (at least the body's size): the
    /// plaintext is `out[0..<n]`. No allocation per record.
    func open(type: UInt8, version: UInt16, body: [UInt8], into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard out.count >= body.count, let outBase = out.baseAddress else { sequence &+= 1; return nil }
        return body.withUnsafeBytes { open(type: type, version: version, body: $0, to: outBase.assumingMemoryBound(to: UInt8.self)) }
    }

    /// `open`, where the record lies: the plaintext overwrites the ciphertext, from
    /// `plaintextStart` on (no second buffer to keep warm). The plaintext's range in `body`.
    func openInPlace(type: UInt8, version: UInt16, body: inout [UInt8]) -> Range<Int>? {
        let start = plaintextStart
        let n = body.withUnsafeMutableBytes { b -> Int? in
            guard b.count > start, let base = b.baseAddress else { sequence &+= 1; return nil }
            return open(type: type, version: version, body: UnsafeRawBufferPointer(b), to: base.assumingMemoryBound(to: UInt8.self) + start)
        }
        return n.map { start..<(start + $0) }
    }

    /// Where the ciphertext, and so a plaintext opened in place, starts in a record body: after
    /// the explicit nonce (TLS 1.2 AES-GCM) or the IV (CBC).
    private var plaintextStart: Int { cbc ? 16 : (!tls13 && iv.count == 4 ? 8 : 0) }

    /// Opens `body` to `out` (room for the body's size; `out` may be the body's own ciphertext,
    /// at `plaintextStart`, as OpenSSL decrypts in place): the plaintext's length.
    private func open(type: UInt8, version: UInt16, body: UnsafeRawBufferPointer, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        defer { sequence &+= 1 }
        guard let base = body.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        if cbc {
            let n = icy_cbc_open(UnsafeMutableRawPointer(context), sequence, type, version, encryptThenMAC ? 1 : 0, base, body.count, out)
            return n >= 0 ? n : nil
        }
        let start = plaintextStart
        guard body.count >= start + 16 else { return nil }
        let ciphertextCount = body.count - start
        let result = withNonceAndAdditionalData(explicit: start > 0 ? UnsafeRawBufferPointer(rebasing: body[0..<start]) : nil, type: type,
                                                version: version, recordLength: body.count, plaintextLength: ciphertextCount - 16) { nonce, aad, aadCount in
            icy_aead_open(UnsafeMutableRawPointer(context), nonce, aad, aadCount, base + start, ciphertextCount, out)
        }
        return result >= 0 ? ciphertextCount - 16 : nil
    }

    /// Seals a record body (tests build captures with it): the inverse of `open`. CBC: the
    /// explicit nonce is the record's IV (16 bytes).
    func seal(type: UInt8, version: UInt16, plaintext: [UInt8], explicitNonce: [UInt8]? = nil) -> [UInt8]? {
        defer { sequence &+= 1 }
        if cbc {
            let iv = explicitNonce ?? [UInt8](repeating: 0x5A, count: 16)
            var out = [UInt8](repeating: 0, count: plaintext.count + 16 + 48 + 16)
            let n = iv.withUnsafeBufferPointer { ivp in
                plaintext.withUnsafeBufferPointer { p in
                    out.withUnsafeMutableBufferPointer { o in
                        icy_cbc_seal(UnsafeMutableRawPointer(context), sequence, type, version, encryptThenMAC ? 1 : 0,
                                     ivp.baseAddress, p.baseAddress, p.count, o.baseAddress)
                    }
                }
            }
            return n >= 0 ? Array(out[0..<n]) : nil
        }
        let overhead = (explicitNonce?.count ?? 0) + 16
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        let result = (explicitNonce ?? []).withUnsafeBytes { explicit in
            withNonceAndAdditionalData(explicit: explicitNonce == nil ? nil : explicit, type: type, version: version,
                                       recordLength: plaintext.count + overhead, plaintextLength: plaintext.count) { nonce, aad, aadCount in
                plaintext.withUnsafeBufferPointer { pp in
                    out.withUnsafeMutableBufferPointer { op in
                        icy_aead_seal(UnsafeMutableRawPointer(context), nonce, aad, aadCount, pp.baseAddress, pp.count, op.baseAddress)
                    }
                }
            }
        }
        guard result >= 0 else { return nil }
        return (explicitNonce ?? []) + out
    }
}

extension RecordProtection {
    /// TLS 1.2: each direction's record protection from the master secret (RFC 5246 §6.3:
    /// key_block = PRF(master, "key expansion", server_random + client_random): the client's and
    /// the server's MAC keys (CBC suites), write keys, then IVs (the AEAD suites' implicit IVs;
    /// CBC records carry their own)). Nil when the PRF fails.
    static func tls12(master: [UInt8], clientRandom: [UInt8], serverRandom: [UInt8], cipher c: TLSCipherParameters,
                      encryptThenMAC: Bool) -> PerDirection<RecordProtection?>? {
        let m = c.cbcMAC?.length ?? 0, k = c.keyLength, v = c.cbcMAC == nil ? c.tls12ImplicitIVLength : 0
        guard let block = TLSKeys.prf(master, "key expansion", seed: serverRandom + clientRandom, length: 2 * (m + k + v),
                                      sha384: c.sha384) else { return nil }
        return PerDirection { direction in
            let side = direction == .fromClient ? 0 : 1
            let key = Array(block[(2 * m + side * k)..<(2 * m + side * k + k)])
            if let mac = c.cbcMAC {
                return RecordProtection(cbcKey: key, macKey: Array(block[(side * m)..<(side * m + m)]), mac: mac,
                                        encryptThenMAC: encryptThenMAC)
            }
            let iv = 2 * (m + k) + side * v
            return RecordProtection(key: key, iv: Array(block[iv..<(iv + v)]), cipher: c, tls13: false)
        }
    }
}

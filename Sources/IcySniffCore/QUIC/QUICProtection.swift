import CIcyCrypto

/// QUIC variable-length integers (RFC 9000 §16), read without trapping. Its readers are
/// always inlined: called per frame field, they stayed calls when the frame loop grew (+8 M
/// instructions on the QUIC twin with keys, callgrind).
struct QUICReader {
    let bytes: UnsafeRawBufferPointer
    var at: Int

    init(_ bytes: UnsafeRawBufferPointer, at: Int = 0) {
        self.bytes = bytes
        self.at = at
    }

    var remaining: Int { bytes.count - at }

    @inline(__always)
    mutating func u8() -> UInt8? {
        guard at < bytes.count else { return nil }
        defer { at += 1 }
        return bytes[at]
    }

    mutating func u32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { at += 4 }
        return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    @inline(__always)
    mutating func varint() -> UInt64? {
        guard let first = u8() else { return nil }
        let length = 1 << Int(first >> 6)
        var value = UInt64(first & 0x3f)
        guard remaining >= length - 1 else { return nil }
        for _ in 1..<length {
            value = value << 8 | UInt64(bytes[at])
            at += 1
        }
        return value
    }

    @inline(__always)
    mutating func take(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, remaining >= n else { return nil }
        defer { at += n }
        return UnsafeRawBufferPointer(rebasing: bytes[at..<(at + n)])
    }

    /// Passes over zero bytes (a packet's PADDING frames, one byte each, often most of an
    /// Initial): 8 at a time, then one at a time.
    @inline(__always)
    mutating func skipZeros() {
        while remaining >= 8, bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self) == 0 { at += 8 }
        while at < bytes.count, bytes[at] == 0 { at += 1 }
    }

    /// A varint length, then that many bytes.
    @inline(__always)
    mutating func vector() -> UnsafeRawBufferPointer? {
        guard let n = varint(), n <= UInt64(remaining) else { return nil }
        return take(Int(n))
    }
}

/// The keys that protect the packets of one direction in one epoch (RFC 9001 §5): the AEAD key
/// and IV, and the header-protection key, all derived from a traffic secret with the version's
/// labels. The 1-RTT keys also derive the next key phase's (`next`, RFC 9001 §6: the `ku` label;
/// the header-protection key stays).
final class QUICPacketKeys {
    private let aead: OpaquePointer
    /// The header-protection key, which key updates keep (RFC 9001 §6): shared by every phase.
    private let protection: HeaderProtection
    private var hp: OpaquePointer { protection.context }
    private let iv: [UInt8]
    let secret: [UInt8]
    let cipher: TLSCipherParameters
    let version: QUICVersion

    /// The keys of `secret` (an Initial secret, or a handshake / 0-RTT / 1-RTT traffic secret).
    /// `hpFrom`: the header-protection key of an earlier key phase (key updates keep it).
    init?(secret: [UInt8], cipher: TLSCipherParameters, version: QUICVersion, hpFrom earlier: QUICPacketKeys? = nil) {
        guard let keys = TrafficKeys(secret: secret, cipher: cipher, labels: version.labels, withHeaderProtection: earlier == nil),
              let a = keys.key.withUnsafeBufferPointer({ icy_aead_new(cipher.kind, $0.baseAddress, $0.count) }) else { return nil }
        if let earlier {
            self.protection = earlier.protection
        } else {
            guard let hpKey = keys.headerProtection,
                  let h = hpKey.withUnsafeBufferPointer({ icy_hp_new(cipher.kind, $0.baseAddress, $0.count) }) else {
                icy_aead_free(a)
                return nil
            }
            self.protection = HeaderProtection(context: OpaquePointer(h))
        }
        self.aead = OpaquePointer(a)
        self.iv = keys.iv
        self.secret = secret
        self.cipher = cipher
        self.version = version
    }

    /// A header-protection context, freed with the last key phase that uses it. Each phase held
    /// the one before it to keep the context alive, so a connection kept every phase it ever had
    /// (100,000 key updates: 167 MiB); now a phase holds only this.
    final class HeaderProtection {
        let context: OpaquePointer
        init(context: OpaquePointer) { self.context = context }
        deinit { icy_hp_free(UnsafeMutableRawPointer(context)) }
    }

    deinit {
        icy_aead_free(UnsafeMutableRawPointer(aead))
    }

    /// The Initial keys of one direction: from the client's first Destination Connection ID and
    /// the version's salt (RFC 9001 §5.2). AES-128-GCM with SHA-256, whatever the handshake chooses.
    static func initial(dcid: [UInt8], version: QUICVersion, server: Bool) -> QUICPacketKeys? {
        initialSecret(dcid: dcid, version: version).flatMap { initial(secret: $0, version: version, server: server) }
    }

    /// The secret both directions' Initial keys derive from (HKDF-Extract of the DCID with the
    /// version's salt).
    static func initialSecret(dcid: [UInt8], version: QUICVersion) -> [UInt8]? {
        var initialSecret = [UInt8](repeating: 0, count: 32)
        let ok = version.salt.withUnsafeBufferPointer { s in
            dcid.withUnsafeBufferPointer { d in
                initialSecret.withUnsafeMutableBufferPointer { o in
                    icy_hkdf_extract(0, s.baseAddress, s.count, d.baseAddress ?? UnsafePointer(s.baseAddress!), d.count, o.baseAddress)
                }
            }
        }
        return ok == 1 ? initialSecret : nil
    }

    /// One direction's Initial keys from the `initialSecret`.
    static func initial(secret initialSecret: [UInt8], version: QUICVersion, server: Bool) -> QUICPacketKeys? {
        guard let secret = TLSKeys.expandLabel(initialSecret, server ? "server in" : "client in", length: 32, sha384: false) else {
            return nil
        }
        return QUICPacketKeys(secret: secret, cipher: TLSCipherParameters(aead: .aes128gcm, sha384: false), version: version)
    }

    /// The next key phase's keys (RFC 9001 §6.1).
    func next() -> QUICPacketKeys? {
        guard let s = TrafficKeys.nextSecret(secret, cipher: cipher, labels: version.labels) else { return nil }
        return QUICPacketKeys(secret: s, cipher: cipher, version: version, hpFrom: self)
    }

    /// The header-protection mask of a 16-byte sample.
    func mask(_ sample: UnsafeRawBufferPointer) -> (UInt8, UInt8, UInt8, UInt8, UInt8)? {
        var m: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &m) { out in
            icy_hp_mask(UnsafeMutableRawPointer(hp), sample.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return ok == 1 ? m : nil
    }

    /// Opens a packet's payload: `header` is the unprotected header (the additional data),
    /// `sealed` the ciphertext with its tag. The plaintext into `out` (room for `sealed.count`);
    /// its length, nil when it does not authenticate.
    func open(packetNumber: UInt64, header: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
              into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard sealed.count >= 16, out.count >= sealed.count else { return nil }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12) { nonce -> Int? in
            for k in 0..<12 { nonce[k] = iv[k] }
            for k in 0..<8 { nonce[11 - k] ^= UInt8(truncatingIfNeeded: packetNumber >> (8 * UInt64(k))) }
            let n = icy_aead_open(UnsafeMutableRawPointer(aead), nonce.baseAddress, header.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                  header.count, sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), sealed.count,
                                  out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            return n >= 0 ? n : nil
        }
    }

    /// Seals a payload (tests build packets with it).
    func seal(packetNumber: UInt64, header: [UInt8], plaintext: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var nonce = iv
        for k in 0..<8 { nonce[11 - k] ^= UInt8(truncatingIfNeeded: packetNumber >> (8 * UInt64(k))) }
        let n = nonce.withUnsafeBufferPointer { np in
            header.withUnsafeBufferPointer { hp in
                plaintext.withUnsafeBufferPointer { pp in
                    out.withUnsafeMutableBufferPointer { op in
                        icy_aead_seal(UnsafeMutableRawPointer(aead), np.baseAddress, hp.baseAddress, hp.count, pp.baseAddress, pp.count, op.baseAddress)
                    }
                }
            }
        }
        return n >= 0 ? out : nil
    }
}

/// RFC 9000 §A.3: the full packet number from its truncated form and the largest one seen.
func decodePacketNumber(largest: UInt64?, truncated: UInt64, bits: Int) -> UInt64 {
    let expected = (largest ?? 0) &+ (largest == nil ? 0 : 1)
    let window: UInt64 = 1 << UInt64(bits)
    let half = window / 2
    let mask = window - 1
    let candidate = (expected & ~mask) | truncated
    if candidate &+ half <= expected && candidate < (1 << 62) - window { return candidate + window }
    if candidate > expected &+ half && candidate >= window { return candidate - window }
    return candidate
}

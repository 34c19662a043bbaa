import CIcyCrypto

/// JA4, the client fingerprint of a TLS or QUIC ClientHello (FoxIO's JA4+ suite; JA4 itself is
/// BSD-3-Clause, unlike JA4S, JA4H, JA4X, JA4L and JA4T, which are not computed here), as
/// FoxIO's reference implementation (rust/ja4/src/tls.rs) computes it:
/// `t13d1516h2_8daaf6152771_e5627efa2ab1` —
/// - `q` when the hello carries QUIC transport parameters (extension 0x39), else `t`;
/// - the version: the highest of supported_versions (GREASE ignored), else the hello's legacy
///   version: `13`, `12`, `11`, `10`, `s3`, `s2`, anything else `00`;
/// - `d` with a server_name extension, `i` without;
/// - the count of cipher suites and of extensions (GREASE ignored, at most 99), two digits each;
/// - the first ALPN value's first and last characters, a character outside ASCII as `9`, a
///   missing one as `0` (no ALPN: `00`; one character `h`: `h0`);
/// - the first 12 hex digits of the SHA-256 of the cipher suites, sorted, as 4-digit lower-case
///   hex joined by commas; then of the extensions, sorted, without server_name and ALPN, then
///   `_` and the signature algorithms in their order (without `_` when there are none). An
///   empty list hashes to `000000000000`.
enum JA4 {
    /// JA4 of a ClientHello's body (after the handshake header); nil when it does not parse.
    static func fingerprint(_ message: ArraySlice<UInt8>) -> String? {
        var r = TLSReader(message)
        guard let legacyVersion = r.u16(), r.take(32) != nil, r.vector(1) != nil, let suites = r.vector(2),
              r.vector(1) != nil else { return nil }
        var ciphers: [UInt16] = []
        var s = TLSReader(suites)
        while let c = s.u16() { if !isGREASE(c) { ciphers.append(c) } }
        var extensions: [UInt16] = []
        var signatureAlgorithms: [UInt16] = []
        var versions: [UInt16] = []
        var alpn: ArraySlice<UInt8>? = nil
        if let block = r.vector(2) {
            for (type, data) in TLSReader.extensions(block) where !isGREASE(type) {
                extensions.append(type)
                var e = TLSReader(data)
                switch type {
                case 13:   // signature_algorithms
                    if signatureAlgorithms.isEmpty, let list = e.vector(2) {
                        var l = TLSReader(list)
                        while let a = l.u16() { signatureAlgorithms.append(a) }
                    }
                case 16:   // ALPN: the first protocol name
                    if alpn == nil, let list = e.vector(2) {
                        var l = TLSReader(list)
                        alpn = l.vector(1).map { ArraySlice($0) } ?? []
                    }
                case 43:   // supported_versions
                    if versions.isEmpty, let list = e.vector(1) {
                        var l = TLSReader(list)
                        while let v = l.u16() { if !isGREASE(v) { versions.append(v) } }
                    }
                default:
                    break
                }
            }
        }
        let quic = extensions.contains(0x39) ? "q" : "t"
        let version = versionCode(versions.max() ?? legacyVersion)
        let sni = extensions.contains(0) ? "d" : "i"
        let first = quic + version + sni + twoDigits(ciphers.count) + twoDigits(extensions.count) + alpnCode(alpn ?? [])
        // The hashed lists are built as bytes: a String per value and `joined` cost about 100,000
        // instructions a ClientHello, the AES of 40 KB of records, in keyless runs too.
        var cipherList: [UInt8] = []
        appendHexList(ciphers.sorted(), to: &cipherList)
        var extensionList: [UInt8] = []
        appendHexList(extensions.filter { $0 != 0 && $0 != 16 }.sorted(), to: &extensionList)
        if !signatureAlgorithms.isEmpty {
            extensionList.append(UInt8(ascii: "_"))
            appendHexList(signatureAlgorithms, to: &extensionList)
        }
        return first + "_" + hash12(cipherList) + "_" + hash12(extensionList)
    }

    /// `values` as 4-digit lower-case hex joined by commas, after what `out` holds.
    static func appendHexList(_ values: [UInt16], to out: inout [UInt8]) {
        out.reserveCapacity(out.count + 5 * values.count)
        for (i, v) in values.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(hexDigit(UInt8(v >> 12)))
            out.append(hexDigit(UInt8((v >> 8) & 15)))
            out.append(hexDigit(UInt8((v >> 4) & 15)))
            out.append(hexDigit(UInt8(v & 15)))
        }
    }

    @inline(__always) static func hexDigit(_ d: UInt8) -> UInt8 { d < 10 ? UInt8(ascii: "0") + d : UInt8(ascii: "a") + d - 10 }

    /// GREASE values (RFC 8701): 0x?a?a with both bytes equal.
    static func isGREASE(_ v: UInt16) -> Bool { v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff }

    static func versionCode(_ v: UInt16) -> String {
        switch v {
        case 0x0304: return "13"
        case 0x0303: return "12"
        case 0x0302: return "11"
        case 0x0301: return "10"
        case 0x0300: return "s3"
        case 0x0002: return "s2"
        default: return "00"
        }
    }

    static func twoDigits(_ n: Int) -> String {
        let n = min(n, 99)
        return n < 10 ? "0\(n)" : "\(n)"
    }

    /// The first and last characters (Unicode scalars, the name read as UTF-8 with invalid bytes
    /// replaced) of the first ALPN value; outside ASCII `9`, missing `0`.
    static func alpnCode(_ name: ArraySlice<UInt8>) -> String {
        let scalars = Array(String(decoding: name, as: UTF8.self).unicodeScalars)
        func code(_ s: Unicode.Scalar?) -> String {
            guard let s else { return "0" }
            return s.isASCII ? String(Character(s)) : "9"
        }
        return code(scalars.first) + code(scalars.count > 1 ? scalars.last : nil)
    }

    /// The first 12 hex digits of the SHA-256 of `text`; `000000000000` for an empty text.
    static func hash12(_ text: String) -> String { hash12(Array(text.utf8)) }

    static func hash12(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "000000000000" }
        var digest = [UInt8](repeating: 0, count: 32)
        guard icy_sha256(bytes, bytes.count, &digest) == 1 else { return "000000000000" }
        return QUICInfo.hex(Array(digest.prefix(6)))
    }
}

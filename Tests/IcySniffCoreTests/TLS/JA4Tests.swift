import Testing
@testable import IcySniffCore

/// JA4 (`JA4`) on ClientHellos built from FoxIO's specification (technical_details/JA4.md): its
/// worked example, whose parts the document gives (`t13d1516h2_8daaf6152771_e5627efa2ab1`),
/// with GREASE values in every list, which must not count; and the rules for the ALPN
/// characters, the version and empty lists. The whole reading was checked against FoxIO's
/// reference implementation's snapshots on its test captures (scripts/ja4-check).
@Suite struct JA4Tests {
    /// A ClientHello body: legacy version, random, empty session id, `ciphers`, null
    /// compression, then `extensions` (type, data) in order.
    static func hello(version: UInt16 = 0x0303, ciphers: [UInt16], extensions: [(UInt16, [UInt8])]) -> ArraySlice<UInt8> {
        func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
        var body = u16(Int(version)) + [UInt8](repeating: 7, count: 32) + [0]
        body += u16(ciphers.count * 2) + ciphers.flatMap { u16(Int($0)) } + [1, 0]
        let block = extensions.flatMap { u16(Int($0.0)) + u16($0.1.count) + $0.1 }
        body += u16(block.count) + block
        return body[...]
    }

    static func list16(_ values: [UInt16], lengthBytes: Int = 2) -> [UInt8] {
        let bytes = values.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
        return (lengthBytes == 2 ? [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] : [UInt8(bytes.count)]) + bytes
    }

    static func alpn(_ names: [[UInt8]]) -> [UInt8] {
        let list = names.flatMap { [UInt8($0.count)] + $0 }
        return [UInt8(list.count >> 8), UInt8(list.count & 0xff)] + list
    }

    static let sni: [UInt8] = { let name = Array("www.icy.test".utf8); return [0, UInt8(name.count + 3), 0, 0, UInt8(name.count)] + name }()

    /// The document's example: its 15 ciphers and 16 extensions (in its order), its signature
    /// algorithms, ALPN h2 and TLS 1.3 in supported_versions; GREASE added to each list.
    static func example(alpnNames: [[UInt8]] = [Array("h2".utf8), Array("http/1.1".utf8)]) -> ArraySlice<UInt8> {
        let ciphers: [UInt16] = [0x2a2a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035]
        let signatures: [UInt16] = [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601]
        let order: [UInt16] = [0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012, 0x002b, 0xff01, 0x000b, 0x000a, 0x0015]
        var extensions: [(UInt16, [UInt8])] = [(0x0a0a, [])]
        for type in order {
            switch type {
            case 0x0000: extensions.append((type, sni))
            case 0x0010: extensions.append((type, alpn(alpnNames)))
            case 0x000d: extensions.append((type, list16(signatures)))
            case 0x002b: extensions.append((type, list16([0x3a3a, 0x0304, 0x0303], lengthBytes: 1)))
            default: extensions.append((type, []))
            }
        }
        extensions.append((0xfafa, [0]))
        return hello(ciphers: ciphers, extensions: extensions)
    }

    @Test func theSpecificationsExample() {
        #expect(JA4.fingerprint(Self.example()) == "t13d1516h2_8daaf6152771_e5627efa2ab1")
        // The hashes' inputs as the document writes them.
        #expect(JA4.hash12("002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9") == "8daaf6152771")
        #expect(JA4.hash12("0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01") == "6d807ffa2a79")
    }

    @Test func alpnCharacters() {
        func code(_ names: [[UInt8]]) -> String? { JA4.fingerprint(Self.example(alpnNames: names)).map { String($0.prefix(10).suffix(2)) } }
        #expect(code([Array("http/1.1".utf8)]) == "h1")
        #expect(code([Array("h3".utf8)]) == "h3")
        // Outside ASCII: 9 (the reference implementation's reading; the name as UTF-8, an
        // invalid byte one replacement character); one character: it and 0.
        #expect(code([[0xFF, 0x61, 0xFE]]) == "99")
        #expect(code([Array("é2".utf8)]) == "92")
        #expect(code([Array("x".utf8)]) == "x0")
        #expect(code([[]]) == "00")
    }

    @Test func withoutExtensionsAndWithoutCiphers() {
        // No extensions: no SNI (i), the legacy version, 00 for ALPN, the extension hash zeros.
        #expect(JA4.fingerprint(Self.hello(version: 0x0303, ciphers: [0xc02f], extensions: [])) == "t12i010000_\(JA4.hash12("c02f"))_000000000000")
        // No cipher (only GREASE): zeros; QUIC transport parameters (0x39): q.
        let quic = Self.hello(ciphers: [0x0a0a], extensions: [(0x0039, [1, 2]), (0x000a, [])])
        #expect(JA4.fingerprint(quic) == "q12i000200_000000000000_\(JA4.hash12("000a,0039"))")
        // An unknown version: 00.
        #expect(JA4.fingerprint(Self.hello(version: 0x7f1c, ciphers: [0x1301], extensions: []))?.hasPrefix("t00i01") == true)
    }

    @Test func aTruncatedHelloHasNone() {
        let whole = Self.example()
        #expect(JA4.fingerprint(whole.prefix(40)) == nil)
    }
}

import CIcyCrypto
import Testing

/// One AEAD context opens every record of a direction (icy_boringssl.c: BoringSSL's EVP_AEAD, the
/// key's schedule made once). A context that has opened other records must answer as a fresh one
/// does, for nonces that share their first 4 bytes (TLS 1.3 and QUIC make every nonce of a key
/// that way) and for some that do not: the same plaintext, and no plaintext for a changed bit.
@Suite struct AEADContextTests {
    @Test(arguments: [Int32(ICY_AES_128_GCM.rawValue), Int32(ICY_AES_256_GCM.rawValue), Int32(ICY_CHACHA20_POLY1305.rawValue)])
    func oneContextOpensEveryRecordAsAFreshOneDoes(_ kind: Int32) throws {
        let key = (0..<(kind == ICY_AES_128_GCM.rawValue ? 16 : 32)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        func context() throws -> UnsafeMutableRawPointer {
            try #require(key.withUnsafeBufferPointer { icy_aead_new(kind, $0.baseAddress, $0.count) })
        }
        let sealer = try context(), reader = try context()
        defer { icy_aead_free(sealer); icy_aead_free(reader) }
        let iv: [UInt8] = (0..<12).map { UInt8($0 &* 13 &+ 5) }
        let aad: [UInt8] = Array("header".utf8)
        var opened = 0, refused = 0
        for n in 0..<40 {
            // The IV xor-ed with a packet number, as TLS 1.3 and QUIC make nonces; records 20 to 24
            // under another IV's first bytes.
            var nonce = iv
            for b in 0..<8 { nonce[4 + b] ^= UInt8(truncatingIfNeeded: UInt64(n &* 3 &+ 1) >> (56 - 8 * UInt64(b))) }
            if (20..<25).contains(n) { nonce[0] ^= 0x80 }
            let plaintext = (0..<(100 + n * 37)).map { UInt8(truncatingIfNeeded: $0 &+ n) }
            var sealed = [UInt8](repeating: 0, count: plaintext.count + 16)
            let length = icy_aead_seal(sealer, nonce, aad, aad.count, plaintext, plaintext.count, &sealed)
            #expect(length == plaintext.count + 16)
            let tampered = n % 7 == 3
            if tampered { sealed[n % sealed.count] ^= 0x01 }
            var out = [UInt8](repeating: 0, count: plaintext.count)
            let result = icy_aead_open(reader, nonce, aad, aad.count, sealed, sealed.count, &out)
            let fresh = try context()
            var freshOut = [UInt8](repeating: 0, count: plaintext.count)
            let freshResult = icy_aead_open(fresh, nonce, aad, aad.count, sealed, sealed.count, &freshOut)
            icy_aead_free(fresh)
            #expect(result == freshResult, "record \(n): the same answer as a fresh context")
            if tampered {
                #expect(result < 0, "record \(n): a changed bit does not open")
                refused += 1
            } else {
                #expect(result == plaintext.count && out == plaintext, "record \(n) opens to its plaintext")
                opened += 1
            }
        }
        #expect(opened == 34 && refused == 6)
    }
}

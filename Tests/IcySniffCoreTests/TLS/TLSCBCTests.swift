import Foundation
import Testing
@testable import IcySniffCore

/// TLS 1.2 CBC suites with an HMAC (issue 15: "they still exist"): AES-128/256-CBC, HMAC-SHA1,
/// SHA-256 and SHA-384, MAC-then-encrypt (RFC 5246 §6.2.3.2) and encrypt-then-MAC (RFC 7366),
/// through OpenSSL's libcrypto.
@Suite struct TLSCBCTests {
    static let suites: [UInt16] = [0xC013, 0xC014, 0x003C, 0xC028]

    /// A record sealed opens to the same bytes, in either MAC order; a changed bit in the IV,
    /// the ciphertext or the MAC, a wrong sequence number or a wrong MAC key does not open.
    @Test(arguments: suites, [false, true])
    func recordsOpenAndTamperingIsDetected(_ suite: UInt16, encryptThenMAC: Bool) throws {
        let cipher = try #require(TLSCipherParameters(suite: suite))
        let mac = try #require(cipher.cbcMAC)
        let key = [UInt8](repeating: 0x42, count: cipher.keyLength)
        let macKey = [UInt8](repeating: 0x17, count: mac.length)
        func protection(macKey: [UInt8] = macKey) -> RecordProtection? {
            RecordProtection(cbcKey: key, macKey: macKey, mac: mac, encryptThenMAC: encryptThenMAC)
        }
        let sender = try #require(protection())
        for length in [0, 1, 15, 16, 17, 1000] {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let iv = (0..<16).map { UInt8($0 + length % 7) }
            let sealed = try #require(sender.seal(type: 23, version: 0x0303, plaintext: plaintext, explicitNonce: iv))
            #expect((sealed.count - 16 - (encryptThenMAC ? mac.length : 0)) % 16 == 0, "whole blocks")
            let receiver = try #require(protection())
            for _ in 0..<Int(sender.sequence - 1) { receiver.skip() }
            #expect(receiver.open(type: 23, version: 0x0303, body: sealed) == plaintext, "\(length) bytes")
            let inPlace = try #require(protection())
            for _ in 0..<Int(sender.sequence - 1) { inPlace.skip() }
            var body = sealed
            let range = try #require(inPlace.openInPlace(type: 23, version: 0x0303, body: &body), "\(length) bytes in place")
            #expect(Array(body[range]) == plaintext, "\(length) bytes in place")
            for position in [0, 20, sealed.count - 1] {
                var tampered = sealed
                tampered[position] ^= 0x01
                let fresh = try #require(protection())
                for _ in 0..<Int(sender.sequence - 1) { fresh.skip() }
                #expect(fresh.open(type: 23, version: 0x0303, body: tampered) == nil, "bit \(position) of \(length) bytes")
            }
            let wrongSequence = try #require(protection())
            if sender.sequence > 1 { #expect(wrongSequence.open(type: 23, version: 0x0303, body: sealed) == nil) }
            let wrongKey = try #require(protection(macKey: [UInt8](repeating: 0x18, count: mac.length)))
            for _ in 0..<Int(sender.sequence - 1) { wrongKey.skip() }
            #expect(wrongKey.open(type: 23, version: 0x0303, body: sealed) == nil)
        }
    }

    /// A real capture (scripts/record-cbc-sample: curl and `openssl s_server`, with curl's key
    /// log): encrypt-then-MAC with HMAC-SHA1, MAC-then-encrypt with SHA-384 (PRF too) and with
    /// SHA-256 over RSA key exchange. Every response is read; without the keys, none.
    @Test func aRecordedCaptureDecrypts() throws {
        let dir = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/tls")
        var options = PipelineOptions()
        options.keyLog = try KeyLog(paths: [dir.appendingPathComponent("cbc-sample.keys").path])
        let (sink, _, _) = try analyse(dir.appendingPathComponent("cbc-sample.pcap").path, options: options)
        #expect(sink.transactions.map { "\($0.request?.method ?? "-") \($0.url) \($0.response?.status ?? 0)" } == [
            "GET https://tls.icy.test:44360/ 200", "GET https://tls.icy.test:44361/ 200", "GET https://tls.icy.test:44361/ 200",
        ])
        #expect(sink.transactions.allSatisfy { $0.allWeirds.isEmpty && ($0.response?.body.bytes ?? 0) > 1000 })
        #expect(sink.connections.map { $0.tls?.cipherSuite } == [0xC013, 0xC028, 0x003C])
        #expect(sink.connections.allSatisfy { $0.tls?.decrypted == true && $0.weirds.isEmpty })
        let (keyless, _, _) = try analyse(dir.appendingPathComponent("cbc-sample.pcap").path)
        #expect(keyless.transactions.isEmpty)
    }
}

import FuzzSupport
import IcySniffCore

/// The TLS session (record framing, handshake parsing, key set-up and record decryption) fed
/// arbitrary bytes from both directions (`feedConnection`'s chunks). The client's first bytes always begin a handshake record (`16 03 01`: the seeds made
/// by scripts/fuzz from captures/tls-sample.pcap carry on from there); a key log has secrets for an all-zero client random (TLS 1.2 and 1.3), so decryption
/// paths run too (their records fail authentication, which must be handled, never trap).
let zeros = String(repeating: "00", count: 32)
/// The repository's own root, for the key logs of the captures the seeds come from: with them the
/// seeds' records decrypt, so mutations around them reach the plaintext paths (and the order of
/// what follows the records, which the decryption thread must keep).
let root = String(#filePath).split(separator: "/", omittingEmptySubsequences: false).dropLast(4).joined(separator: "/")
let keyLog = (try? KeyLog(paths: [root + "/captures/tls-sample.keys", root + "/Tests/Fixtures/tls/cbc-sample.keys"])) ?? KeyLog(text: "")
let added: Void = keyLog.add(text: """
CLIENT_RANDOM \(zeros) \(String(repeating: "11", count: 48))
CLIENT_HANDSHAKE_TRAFFIC_SECRET \(zeros) \(String(repeating: "22", count: 32))
SERVER_HANDSHAKE_TRAFFIC_SECRET \(zeros) \(String(repeating: "33", count: 32))
CLIENT_TRAFFIC_SECRET_0 \(zeros) \(String(repeating: "44", count: 32))
SERVER_TRAFFIC_SECRET_0 \(zeros) \(String(repeating: "55", count: 32))
CLIENT_EARLY_TRAFFIC_SECRET \(zeros) \(String(repeating: "66", count: 32))
""")

/// What a run emitted, in order, as far as a comparison needs.
final class Summary: TransactionSink {
    var lines: [String] = []
    func consume(_ t: Transaction) { lines.append("\(t.url) \(t.response?.status ?? -1) \(t.weirds)") }
    func connectionFinished(_ c: Connection) { lines.append("end \(c.label) \(c.tls?.decrypted ?? false) \(c.weirds.count)") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    _ = added
    var options = PipelineOptions()
    options.keyLog = keyLog
    guard size % 2 == 1 else {
        feedConnection(Pipeline(sink: Discard(), options: options), serverPort: 443, first: [22, 3, 1], data, size)
        return 0
    }
    // Odd sizes: once as records come and once on the decryption thread from the first record
    // (DecryptionQueue); both runs must emit the same, in the same order.
    let here = Summary(), threaded = Summary()
    feedConnection(Pipeline(sink: here, options: options), serverPort: 443, first: [22, 3, 1], data, size)
    options.decryptOnSecondThreadAfter = 0
    let pipeline = Pipeline(sink: threaded, options: options)
    feedConnection(pipeline, serverPort: 443, first: [22, 3, 1], data, size)
    if here.lines != threaded.lines { fatalError("the decryption thread changed the outputs: \(here.lines) / \(threaded.lines)") }
    return 0
}

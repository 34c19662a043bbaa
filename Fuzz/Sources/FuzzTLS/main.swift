import FuzzSupport
import IcySniffCore

/// The TLS session (record framing, handshake parsing, key set-up and record decryption) fed
/// arbitrary bytes from both directions (`feedConnection`'s chunks). The client's first bytes always begin a handshake record (`16 03 01`: the seeds made
/// by scripts/fuzz from captures/tls-sample.pcap carry on from there); a key log has secrets for an all-zero client random (TLS 1.2 and 1.3), so decryption
/// paths run too (their records fail authentication, which must be handled, never trap).
let zeros = String(repeating: "00", count: 32)
let keyLog = KeyLog(text: """
CLIENT_RANDOM \(zeros) \(String(repeating: "11", count: 48))
CLIENT_HANDSHAKE_TRAFFIC_SECRET \(zeros) \(String(repeating: "22", count: 32))
SERVER_HANDSHAKE_TRAFFIC_SECRET \(zeros) \(String(repeating: "33", count: 32))
CLIENT_TRAFFIC_SECRET_0 \(zeros) \(String(repeating: "44", count: 32))
SERVER_TRAFFIC_SECRET_0 \(zeros) \(String(repeating: "55", count: 32))
CLIENT_EARLY_TRAFFIC_SECRET \(zeros) \(String(repeating: "66", count: 32))
""")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var options = PipelineOptions()
    options.keyLog = keyLog
    feedConnection(Pipeline(sink: Discard(), options: options), serverPort: 443, first: [22, 3, 1], data, size)
    return 0
}

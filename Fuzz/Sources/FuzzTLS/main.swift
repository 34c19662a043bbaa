import IcySniffCore

/// The TLS session (record framing, handshake parsing, key set-up and record decryption) fed
/// arbitrary bytes from both directions: each chunk is (direction bit and length, then the
/// bytes). The client's first bytes always begin a handshake record (`16 03 01`: the seeds made
/// by scripts/fuzz from captures/tls-sample.pcap carry on from there); a key log has secrets for an all-zero client random (TLS 1.2 and 1.3), so decryption
/// paths run too (their records fail authentication, which must be handled, never trap).
final class Discard: TransactionSink {
    func consume(_ transaction: Transaction) {}
    func connectionFinished(_ connection: Connection) {}
}

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
    let pipeline = Pipeline(sink: Discard(), options: options)
    let client = Endpoint(address: IPAddress(ipv4: 1), port: 50000)
    let server = Endpoint(address: IPAddress(ipv4: 2), port: 443)
    var seq: [UInt32] = [1000, 9000]
    var t: Int64 = 0
    func send(_ side: Int, _ bytes: [UInt8]) {
        t += 1000
        bytes.withUnsafeBytes { raw in
            pipeline.ingest(TCPSegment(source: side == 0 ? client : server, destination: side == 0 ? server : client,
                                       sequence: seq[side], acknowledgement: seq[1 - side], flags: [.ack],
                                       payload: raw, timestamp: Timestamp(nanoseconds: t)))
        }
        seq[side] &+= UInt32(bytes.count)
    }
    send(0, [22, 3, 1])
    var i = 0
    while i < size {
        let control = data[i]
        let length = min(Int(control & 0x7F) * 4 + 1, size - i - 1)
        guard length > 0 else { break }
        send(Int(control >> 7), Array(UnsafeBufferPointer(start: data + i + 1, count: length)))
        i += 1 + length
    }
    pipeline.finish()
    return 0
}

import IcySniffCore

/// Discards what a pipeline emits (the targets look for traps, not results).
public final class Discard: TransactionSink {
    public init() {}
    public func consume(_ transaction: Transaction) {}
    public func connectionFinished(_ connection: Connection) {}
}

/// One TCP connection fed to a pipeline from the fuzzer's bytes, as FuzzTLS and FuzzHTTP2 read
/// them: each chunk is a control byte (the top bit: the server's side; the rest: length / 4),
/// then that many bytes plus one. `first` is sent by the client before the chunks (a TLS record
/// header, the HTTP/2 preface), so that the session under test is the one chosen.
public func feedConnection(_ pipeline: Pipeline, serverPort: UInt16, first: [UInt8],
                           _ data: UnsafePointer<UInt8>, _ size: Int) {
    let client = Endpoint(address: IPAddress(ipv4: 1), port: 50000)
    let server = Endpoint(address: IPAddress(ipv4: 2), port: serverPort)
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
    send(0, first)
    var i = 0
    while i < size {
        let control = data[i]
        let length = min(Int(control & 0x7F) * 4 + 1, size - i - 1)
        guard length > 0 else { break }
        send(Int(control >> 7), Array(UnsafeBufferPointer(start: data + i + 1, count: length)))
        i += 1 + length
    }
    pipeline.finish()
}

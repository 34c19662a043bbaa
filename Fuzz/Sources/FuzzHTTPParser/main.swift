import IcySniffCore

/// The HTTP/1.x parser and pairing with arbitrary input and arbitrary splits, as in llhttp's
/// fuzzer: the first byte chooses the segment size and which side sends first; the input is then
/// cut at 0x00 0x00 into alternating client and server blocks.
final class Discard: TransactionSink {
    func consume(_ transaction: Transaction) { _ = transaction.allWeirds; _ = transaction.url }
    func connectionFinished(_ connection: Connection) {}
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let segment = Int(bytes[0] & 0x3f) + 1
    var clientTurn = bytes[0] & 0x40 == 0
    var options = PipelineOptions()
    options.http.keepBodies = bytes[0] & 0x80 != 0
    options.http.maxHeaderBytes = 4096
    let pipeline = Pipeline(sink: Discard(), options: options)
    let client = Endpoint(address: IPAddress(ipv4: 0x0A00_0002), port: 40000)
    let server = Endpoint(address: IPAddress(ipv4: 0x0A00_0001), port: 80)
    var seq: [UInt32] = [1000, 5000]
    var t: Int64 = 1
    func send(_ fromClient: Bool, _ flags: TCPFlags, _ payload: ArraySlice<UInt8>) {
        let side = fromClient ? 0 : 1
        t += 1000
        payload.withUnsafeBytes { raw in
            pipeline.ingest(TCPSegment(source: fromClient ? client : server, destination: fromClient ? server : client,
                                       sequence: seq[side], acknowledgement: seq[1 - side], flags: flags, payload: raw,
                                       timestamp: Timestamp(nanoseconds: t)))
        }
        seq[side] = seq[side] &+ UInt32(payload.count) &+ (flags.contains(.syn) || flags.contains(.fin) ? 1 : 0)
    }
    send(true, [.syn], [])
    send(false, [.syn, .ack], [])
    var i = 1
    var blockStart = 1
    while i <= bytes.count {
        let atEnd = i == bytes.count
        if atEnd || (i + 1 < bytes.count && bytes[i] == 0 && bytes[i + 1] == 0) {
            var j = blockStart
            while j < i {
                let end = min(i, j + segment)
                send(clientTurn, [.ack], bytes[j..<end])
                j = end
            }
            clientTurn.toggle()
            i += 2
            blockStart = i
        } else {
            i += 1
        }
    }
    send(true, [.fin, .ack], [])
    send(false, [.fin, .ack], [])
    pipeline.finish()
    return 0
}

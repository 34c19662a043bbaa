import IcySniffCore

/// TCP reassembly fed arbitrary segment sequences: each 8-byte record is (side and flags,
/// sequence offset (3 bytes), length, acknowledgement offset (2 bytes), data byte), applied to one
/// connection whose streams carry HTTP, so gaps, overlaps and wrap-around reach the parser.
final class Discard: TransactionSink {
    func consume(_ transaction: Transaction) {}
    func connectionFinished(_ connection: Connection) {}
}

let requestText = Array("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloPOST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".utf8)
let responseText = Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbodyHTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 404 No\r\n\r\nrest of stream".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var limits = ReassemblyLimits()
    limits.maxBufferedBytesPerDirection = 2048
    var options = PipelineOptions()
    options.reassembly = limits
    let pipeline = Pipeline(sink: Discard(), options: options)
    let a = Endpoint(address: IPAddress(ipv4: 1), port: 1234)
    let b = Endpoint(address: IPAddress(ipv4: 2), port: 80)
    let isn: [UInt32] = [0xFFFF_FF00, 0x7FFF_FFF0]
    var i = 0
    var t: Int64 = 0
    var scratch = [UInt8](repeating: 0, count: 256)
    while i + 8 <= size {
        let control = data[i]
        let side = Int(control & 1)
        let flags = TCPFlags(rawValue: (control >> 1) & 0x1f)
        let offset = UInt32(data[i + 1]) << 16 | UInt32(data[i + 2]) << 8 | UInt32(data[i + 3])
        let length = Int(data[i + 4])
        let ackOffset = UInt32(data[i + 5]) << 8 | UInt32(data[i + 6])
        let text = side == 0 ? requestText : responseText
        for k in 0..<length {
            let pos = Int(offset) + k
            scratch[k] = pos < text.count ? text[pos] : data[i + 7]
        }
        t += Int64(data[i + 7]) * 1000
        scratch.withUnsafeBytes { raw in
            pipeline.ingest(TCPSegment(source: side == 0 ? a : b, destination: side == 0 ? b : a,
                                       sequence: isn[side] &+ offset, acknowledgement: isn[1 - side] &+ ackOffset,
                                       flags: flags, payload: UnsafeRawBufferPointer(rebasing: raw[0..<length]),
                                       missingPayload: Int(control >> 7) * 10, timestamp: Timestamp(nanoseconds: t)))
        }
        i += 8
    }
    pipeline.finish()
    return 0
}

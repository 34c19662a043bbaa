import FuzzSupport
import IcySniffCore

/// The QUIC stage and HTTP/3 (connection finding, Initial keys, header protection, packet
/// numbers, CRYPTO and STREAM reassembly, the TLS handshake reader, HTTP/3 frames, QPACK by
/// libnghttp3, pairing) fed arbitrary UDP datagrams between one client and one server: each
/// datagram is a control byte (the top bit: the server's), a 16-bit length, then the bytes. The
/// key logs of the repository's QUIC captures are loaded, so the seeds scripts/fuzz makes from
/// those captures decrypt, and mutations around them reach the 1-RTT and HTTP/3 paths (a
/// mutated packet fails authentication: that must be flagged, never trap).
let root = String(#filePath).split(separator: "/", omittingEmptySubsequences: false).dropLast(4).joined(separator: "/")
let keyLog = (try? KeyLog(paths: [root + "/captures/h3-sample.keys"]
                                 + ["h3-concurrent-qpack-statuses", "h3-chacha20-keyupdate", "h3-resume-0rtt", "h3-v2-rebind-cancel",
                                    "stateless-reset"].map { root + "/Tests/Fixtures/quic/\($0).keys" })) ?? KeyLog(text: "")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var options = PipelineOptions()
    options.keyLog = keyLog
    options.http.keepBodies = size % 2 == 0
    let pipeline = Pipeline(sink: Discard(), options: options)
    let client = Endpoint(address: IPAddress(ipv4: 1), port: 50000)
    let server = Endpoint(address: IPAddress(ipv4: 2), port: 443)
    var t: Int64 = 1_700_000_000_000_000_000
    var i = 0
    while i + 3 <= size {
        let fromServer = data[i] & 0x80 != 0
        let length = min(Int(data[i + 1]) << 8 | Int(data[i + 2]), size - i - 3)
        let datagram = UnsafeRawBufferPointer(start: data + i + 3, count: length)
        t += 1_000_000
        pipeline.ingest(UDPDatagram(source: fromServer ? server : client, destination: fromServer ? client : server,
                                    payload: datagram, timestamp: Timestamp(nanoseconds: t)))
        i += 3 + length
    }
    pipeline.finish()
    return 0
}

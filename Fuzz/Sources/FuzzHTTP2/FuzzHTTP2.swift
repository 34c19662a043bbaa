import FuzzSupport
import IcySniffCore

/// The HTTP/2 session (frame reader, HPACK decoding by libnghttp2, pairing by stream id) fed
/// arbitrary bytes from both directions of an h2c connection (`feedConnection`'s chunks). The
/// client's first bytes are always the connection preface (the seeds made by scripts/fuzz from
/// captures/h2c-sample.pcap carry on from there), so every frame type, header block and stream
/// state is reachable; kept bodies on every other input.
let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var options = PipelineOptions()
    options.http.keepBodies = size % 2 == 0
    feedConnection(Pipeline(sink: Discard(), options: options), serverPort: 80, first: preface, data, size)
    return 0
}

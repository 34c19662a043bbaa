import IcySniffCore

/// Packet decoding from raw link-layer bytes: the first byte picks the link type, the rest is
/// the packet; decoded TCP segments go on into reassembly and HTTP.
final class Discard: TransactionSink {
    func consume(_ transaction: Transaction) {}
    func connectionFinished(_ connection: Connection) {}
}

/// Every link type the decoder reads (scripts/fuzz's encapsulation seeds index this table).
let linkTypes: [Int32] = [1, 0, 108, 12, 228, 229, 113, 276, 239, 9, 50, 51, 104, 105, 119, 127, 163, 192]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let link = LinkType(dlt: linkTypes[Int(data[0]) % linkTypes.count])
    var decoder = PacketDecoder(linkType: link)
    let pipeline = Pipeline(sink: Discard())
    let body = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    // The same bytes as one packet, then cut short (snaplen), then twice (fragments, retransmits).
    let wire = size - 1 + Int(data[0] >> 4) * 100
    pipeline.process(CapturedPacket(bytes: body, timestamp: Timestamp(nanoseconds: 1), wireLength: wire), decoder: &decoder)
    pipeline.process(CapturedPacket(bytes: UnsafeRawBufferPointer(rebasing: body[0..<(body.count / 2)]),
                                    timestamp: Timestamp(nanoseconds: 2), wireLength: body.count), decoder: &decoder)
    pipeline.process(CapturedPacket(bytes: body, timestamp: Timestamp(nanoseconds: 3), wireLength: body.count), decoder: &decoder)
    pipeline.finish()
    return 0
}

/// One packet as the capture source hands it over.
///
/// `bytes` are borrowed from libpcap and stay valid only until the next read from the same source:
/// a stage that needs them later copies them.
public struct CapturedPacket {
    public var bytes: UnsafeRawBufferPointer
    public var timestamp: Timestamp
    /// Length of the packet on the wire; larger than `bytes.count` when the snaplen cut it short.
    public var wireLength: Int

    @inlinable public init(bytes: UnsafeRawBufferPointer, timestamp: Timestamp, wireLength: Int) {
        self.bytes = bytes
        self.timestamp = timestamp
        self.wireLength = wireLength
    }
}

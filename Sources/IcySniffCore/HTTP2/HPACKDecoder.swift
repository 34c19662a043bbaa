import CNghttp2

/// HPACK (RFC 7541) decoding of the header blocks one endpoint sends: the static and dynamic
/// tables, table size updates, Huffman-coded strings. The decoding is libnghttp2's inflater
/// (Debian's libnghttp2-dev), the one curl and nginx rely on; this type only owns it and hands
/// each decoded field on as bytes.
///
/// One decoder per direction of a connection, fed every header block of that direction in
/// order (a block skipped would leave its dynamic table wrong). After a block fails to decode
/// the table is unknown: the decoder refuses everything after it (`broken`), so nothing is guessed.
final class HPACKDecoder {
    private var inflater: OpaquePointer?
    private(set) var broken = false

    init() {
        if nghttp2_hd_inflate_new(&inflater) != 0 { inflater = nil; broken = true }
    }

    deinit {
        if let inflater { nghttp2_hd_inflate_del(inflater) }
    }

    /// The decoding endpoint's SETTINGS_HEADER_TABLE_SIZE took effect (its peer acknowledged it).
    func setTableSizeLimit(_ size: Int) {
        guard let inflater, !broken else { return }
        if nghttp2_hd_inflate_change_table_size(inflater, size) != 0 { broken = true }
    }

    /// Decodes one whole header block (HEADERS or PUSH_PROMISE plus its CONTINUATIONs), calling
    /// `field` with each name and value in order; the buffers are valid for that call only.
    /// Returns false when the block does not decode (the decoder is then broken).
    func decode(_ block: UnsafeRawBufferPointer,
                _ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        guard let inflater, !broken else { return false }
        let base = block.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var offset = 0
        while true {
            var nv = nghttp2_nv()
            var flags: Int32 = 0
            let used = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, base.map { $0 + offset }, block.count - offset, 1)
            if used < 0 { broken = true; return false }
            offset += used
            if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                field(UnsafeBufferPointer(start: nv.name, count: nv.namelen),
                      UnsafeBufferPointer(start: nv.value, count: nv.valuelen))
            }
            if flags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                nghttp2_hd_inflate_end_headers(inflater)
                return true
            }
            if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) == 0 && offset >= block.count {
                // All input used and still not final: the block ends inside a field.
                broken = true
                return false
            }
        }
    }

    /// The header block could not be read (lost in a capture gap): the table is unknown from here.
    func markBroken() { broken = true }
}

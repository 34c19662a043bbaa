extension String {
    /// The text a C function wrote into `buffer` (libpcap's error buffer, a line `fgets` read):
    /// up to its terminating NUL, or all of it when there is none, as UTF-8 (bytes that are not
    /// become U+FFFD). `package`: the web server and the command read C buffers too.
    package init(cBuffer buffer: [CChar]) {
        self = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

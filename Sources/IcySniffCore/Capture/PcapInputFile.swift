import CIcyShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a `PcapSource` holds of its input file besides its reader (libpcap's handle owns the `FILE`
/// it reads, a pcapng reader does not), freed when the source closes: after libpcap's handle,
/// whose `FILE` reads through `stdioBuffer`.
struct PcapInputFile {
    /// The descriptor the capture is read from (files), for progress reports.
    var fd: Int32 = -1
    /// Size of the capture file in bytes (0 when it is not a regular file).
    var size: Int64 = 0
    /// The stdio buffer of a capture file (freed after libpcap closes the file).
    var stdioBuffer: UnsafeMutableRawPointer? = nil
    /// The decompressing stream's cookie (a compressed file, or a pipe), for its error text.
    var decompressCookie: UnsafeMutableRawPointer? = nil
    /// The stream a pcapng reader reads.
    var pcapngFile: UnsafeMutablePointer<FILE>? = nil
    /// The mapping of a mapped reader that handed over, kept until the source closes (its
    /// packets stay valid).
    var retiredMapping: PcapMapping? = nil

    /// What the decompression failed with, if it did.
    var decompressionError: String? { Self.decompressionFailure(decompressCookie) }

    /// At the end of the records: why reading failed after all (the compressed data ended
    /// damaged), or nil (a true end). Both readers, libpcap's and the pcapng one, ask it.
    var failureAtEnd: String? { decompressionError.map { "compressed data is damaged: \($0)" } }

    /// A reader's failure `message`, with what the decompression failed with, if it did.
    func explaining(_ message: String) -> String {
        guard let err = decompressionError else { return message }
        return message + " (decompressing: \(err))"
    }

    /// What the decompressing stream of `cookie` failed with, if it did.
    static func decompressionFailure(_ cookie: UnsafeMutableRawPointer?) -> String? {
        guard let cookie, let err = icy_decompress_error(cookie) else { return nil }
        return String(cString: err)
    }

    mutating func close() {
        if let pcapngFile { fclose(pcapngFile) }
        pcapngFile = nil
        stdioBuffer?.deallocate()
        stdioBuffer = nil
        retiredMapping = nil
    }
}

#if canImport(Glibc)
import Glibc
#endif
@testable import IcySniffCore

/// The whole pipeline on a capture file built from the fuzzer's bytes (libpcap reads it),
/// exported as HAR into memory.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let fd = memfd_create("capture", 0)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var written = 0
    while written < size {
        let n = write(fd, data + written, size - written)
        if n <= 0 { return 0 }
        written += n
    }
    guard let source = try? PcapSource.open(path: "/proc/self/fd/\(fd)") else { return 0 }
    let writer = HARWriter()
    let pipeline = Pipeline(sink: writer)
    _ = pipeline.run(source)
    pipeline.finish()
    let out = OutputFile(memory: true)
    writer.write(to: out)
    precondition(!out.takeBytes().isEmpty)
    return 0
}

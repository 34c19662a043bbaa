#if canImport(Glibc)
import Glibc
#endif
import IcySniffCore

/// The whole pipeline on a capture file built from the fuzzer's bytes (libpcap reads pcap, the
/// pcapng block reader pcapng: seeds of both kinds, multi-link.pcapng among them),
/// exported as HAR into memory.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let path = "/tmp/icy-fuzz-\(getpid()).pcap"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return 0 }
    var written = 0
    while written < size {
        let n = write(fd, data + written, size - written)
        if n <= 0 { close(fd); return 0 }
        written += n
    }
    close(fd)
    guard let source = try? PcapSource.open(path: path) else { return 0 }
    let writer = HARWriter()
    let pipeline = Pipeline(sink: CacheJudgingSink(next: writer))
    _ = pipeline.run(source)
    pipeline.finish()
    let out = OutputFile(memory: true)
    writer.write(to: out)
    precondition(!out.takeBytes().isEmpty)
    return 0
}

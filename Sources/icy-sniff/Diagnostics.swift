#if canImport(Glibc)
import Glibc
#endif

/// Prints one-line messages to standard error, prefixed with the program name.
enum Diagnostics {
    static func error(_ message: String) {
        write("icy-sniff: \(message)\n")
    }

    static func warning(_ message: String) {
        write("icy-sniff: warning: \(message)\n")
    }

    static func info(_ message: String) {
        write(message + "\n")
    }

    /// Text as it is (progress lines).
    static func raw(_ text: String) {
        write(text)
    }

    private static func write(_ s: String) {
        var text = s
        text.withUTF8 { buf in _ = Glibc.write(2, buf.baseAddress, buf.count) }
    }
}

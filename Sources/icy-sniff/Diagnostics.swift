import ArgumentParser
import IcySniffCore
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

    /// A diagnostic of the library (an input's outcome), if there is one.
    static func show(_ diagnostic: Diagnostic?) {
        switch diagnostic {
        case .error(let text)?: error(text)
        case .warning(let text)?: warning(text)
        case nil: break
        }
    }

    /// `--keylog` files, read once for the whole run and on as they grow: an unreadable one is
    /// the user's error (one line, exit 2). Nil when none was given. `growing`: a live capture,
    /// whose clients write the key log as they connect.
    static func loadKeyLog(_ paths: [String], growing: Bool = false) throws -> KeyLog? {
        guard !paths.isEmpty else { return nil }
        do {
            let keyLog = try KeyLog(paths: paths, growing: growing)
            for path in keyLog.notYetWritten { warning("key log '\(path)' does not exist yet: it is read as a client writes it") }
            if keyLog.count == 0 && !growing {
                // Not a key log, or an empty one: nothing will be decrypted, and the user should know
                // now, not from a summary that says nothing was.
                let bad = keyLog.malformedLines
                let names = paths.map { "'\($0)'" }.joined(separator: ", ")
                warning("key log \(names) holds no secrets" + (bad > 0 ? " (\(bad) lines are not 'LABEL client_random secret')" : "")
                        + ": nothing will be decrypted")
            }
            return keyLog
        } catch {
            Self.error(error.message)
            throw ExitCode(ExitStatus.badInput.rawValue)
        }
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

#if canImport(Glibc)
import Glibc
#endif

/// Rotated capture sets (tcpdump `-C`/`-G -w`, dumpcap `-b`, `editcap -c/-i` splits) analysed as
/// one continuous stream, so that a connection crossing a file boundary stays one connection.
///
/// Input: the capture paths of a run, in the order given or found. Output: `CaptureSet`s, each a
/// unit of work (one pipeline, one output in `--out-dir`) whose pieces are read in turn.
///
/// Pieces are recognised by name and confirmed by content:
/// - Name: files of one folder whose names differ only in their digits, and those digits are a
///   counter or a time: a digit run that counts up with the pieces (tcpdump -C's `trace.pcap`,
///   `trace.pcap1`, …; dumpcap's and editcap's `cap_00001_20261123101500.pcapng`) is their
///   sequence number, and a number skipped is a missing piece; without one, every name must
///   carry the year of its first packet (strftime names from tcpdump -G). Names alike by chance
///   (`heuristic-200.pcap`, `heuristic-404.pcap`) stay separate captures.
/// - Content: the same link type and snapshot length; ordered by sequence number, else by first
///   packet. Whether each piece starts after the previous one ended is checked as they are read
///   (`CaptureDriver`), since a piece's last packet is known only then.
/// - Files given one by one with `-r` (no `--out-dir`) are taken as the user's list in time
///   order: they join the same way when link type and snapshot length agree and their first
///   packets do not go back in time.
public struct CaptureSet: Sendable {
    public struct Piece: Sendable {
        public var path: String
        /// Output stem of the piece on its own (relative to the folder walked).
        public var stem: String
        public var probe: CaptureProbe?
        /// Sequence numbers that the name series skips right before this piece.
        public var missingBefore: [Int] = []
        public init(path: String, stem: String, probe: CaptureProbe? = nil) {
            self.path = path
            self.stem = stem
            self.probe = probe
        }

        /// A stream, not probed in advance: it joins the piece before it as given, and its first
        /// packet is checked once it is open (`CaptureDriver`).
        var isStream: Bool { probe == nil && CaptureProbe.isStream(path: path) }
    }

    /// The name of its output (relative to `--out-dir`, no extension).
    public var name: String
    public var pieces: [Piece]
    /// Joined by their names (a rotation), not only as a list the user gave.
    public var joinedByName: Bool

    public var paths: [String] { pieces.map(\.path) }

    public init(name: String, pieces: [Piece], joinedByName: Bool) {
        self.name = name
        self.pieces = pieces
        self.joinedByName = joinedByName
    }
}

/// What the start of a capture file says, for joining pieces: link type, snapshot length, and
/// the time of its first packet (nil: none).
public struct CaptureProbe: Sendable, Equatable {
    public var dlt: Int32
    public var snaplen: Int32
    public var firstPacket: Timestamp?

    /// Opens the capture and reads one packet; nil when it cannot be read at all, or is a stream.
    public static func of(path: String) -> CaptureProbe? {
        guard !isStream(path: path), let source = try? PcapSource.open(path: path) else { return nil }
        var first: Timestamp? = nil
        if case .packet(let p) = source.next() { first = p.timestamp }
        return CaptureProbe(dlt: source.dlt, snaplen: source.snaplen, firstPacket: first)
    }

    /// Standard input, a FIFO, a pipe (`<(zcat a.gz)`), a socket or a device: it can be read only
    /// once, so it is never probed in advance (a probe would consume its start).
    public static func isStream(path: String) -> Bool {
        if path == "-" { return true }
        var st = stat()
        guard stat(path, &st) == 0 else { return false }
        let type = st.st_mode & S_IFMT
        return type != S_IFREG && type != S_IFDIR
    }

    func canContinue(_ previous: CaptureProbe) -> Bool { dlt == previous.dlt && snaplen == previous.snaplen }
}

public enum CaptureSets {
    /// A piece that starts more than this after the previous one ended is not its continuation:
    /// connections are not kept open across such a gap (browsers close idle connections after
    /// 300 s, nginx after 75 s), and the captures are more likely unrelated than a rotation.
    public static let maxGapSeconds: Int64 = 600

    public struct Input: Sendable {
        public var path: String
        public var stem: String
        /// Found in a folder walk (grouped by name), or named on the command line.
        public var fromDirectory: Bool
        public init(path: String, stem: String, fromDirectory: Bool) {
            self.path = path
            self.stem = stem
            self.fromDirectory = fromDirectory
        }
    }

    /// Groups a run's inputs into sets. `joinListed`: files named one by one join as a list
    /// (one output); otherwise they are grouped by name like files found in folders.
    /// `probe` reads a capture's start (tests may stub the file system, not the rule).
    public static func group(_ inputs: [Input], joinListed: Bool,
                             probe: (String) -> CaptureProbe? = CaptureProbe.of) -> [CaptureSet] {
        var sets: [CaptureSet] = []
        var listed: [CaptureSet.Piece] = []
        var byName: [String: [CaptureSet.Piece]] = [:]
        var nameOrder: [String] = []
        for input in inputs {
            // Captures are probed (opened, one packet read) only where they may join another:
            // a run of one capture pays nothing for the grouping.
            let piece = CaptureSet.Piece(path: input.path, stem: input.stem)
            if input.path == "-" {
                sets.append(CaptureSet(name: input.stem, pieces: [piece], joinedByName: false))
            } else if joinListed && !input.fromDirectory {
                listed.append(piece)
            } else {
                let key = Path.folder(input.path) + "/" + nameKey(Path.name(input.path))
                if byName[key] == nil { nameOrder.append(key) }
                byName[key, default: []].append(piece)
            }
        }
        if !listed.isEmpty { sets += chainListed(listed, probe: probe) }
        for key in nameOrder { sets += chainByName(byName[key]!, probe: probe) }
        return sets
    }

    /// A list the user gave, in its order: consecutive pieces join while their content agrees
    /// and their first packets do not go back in time; a stream joins the piece before it.
    static func chainListed(_ pieces: [CaptureSet.Piece], probe: (String) -> CaptureProbe?) -> [CaptureSet] {
        guard pieces.count > 1 else { return [make(pieces, byName: false)] }
        let probed = pieces.map { piece in CaptureSet.Piece(path: piece.path, stem: piece.stem, probe: probe(piece.path)) }
        return split(probed, byName: false) { previous, next in
            // A stream (FIFOs fed by a distributed run, `<(zcat a.gz)`) continues the list as given.
            if next.isStream { return true }
            guard let p = next.probe, let q = previous.probe, let a = q.firstPacket, let b = p.firstPacket else { return false }
            return p.canContinue(q) && b >= a
        }
    }

    /// Files of one folder whose names differ only in digits: ordered by their sequence number
    /// (or first packet), split where the content disagrees; unreadable ones stand alone.
    static func chainByName(_ pieces: [CaptureSet.Piece], probe: (String) -> CaptureProbe?) -> [CaptureSet] {
        guard pieces.count > 1 else { return [make(pieces, byName: false)] }
        let probed = pieces.map { piece in CaptureSet.Piece(path: piece.path, stem: piece.stem, probe: probe(piece.path)) }
        var sets: [CaptureSet] = []
        for piece in probed where piece.probe?.firstPacket == nil { sets.append(make([piece], byName: false)) }
        // In the order of their first packets: the counter must follow it, strftime names take it.
        var readable = probed.filter { $0.probe?.firstPacket != nil }
            .sorted { ($0.probe!.firstPacket!, $0.path) < ($1.probe!.firstPacket!, $1.path) }
        let numbers = readable.map { digitRuns(Path.name($0.path)) }
        if let counter = counterPosition(numbers) {
            let seq = numbers.map { sequence($0, counter) }
            for i in readable.indices.dropFirst() where seq[i] > seq[i - 1] + 1 {
                readable[i].missingBefore = Array((seq[i - 1] + 1)..<seq[i])
            }
        } else if !readable.allSatisfy({ namesItsYear(Path.name($0.path), $0.probe!.firstPacket!) }) {
            // Names alike by chance (heuristic-200.pcap, heuristic-404.pcap): separate captures,
            // in the order they were given.
            return sets + probed.filter { $0.probe?.firstPacket != nil }.map { make([$0], byName: false) }
        }
        // A piece continues the one before when its content agrees and it starts later: two
        // copies of one capture, or captures of two phones made at the same time (`phone1.pcap`,
        // `phone2.pcap`), start together and stay apart.
        return sets + split(readable, byName: true) { previous, next in
            next.probe!.canContinue(previous.probe!) && next.probe!.firstPacket! > previous.probe!.firstPacket!
        }
    }

    /// Cuts ordered pieces into sets where `continues` says the next one does not follow.
    static func split(_ pieces: [CaptureSet.Piece], byName: Bool,
                      continues: (CaptureSet.Piece, CaptureSet.Piece) -> Bool) -> [CaptureSet] {
        var sets: [CaptureSet] = []
        var current: [CaptureSet.Piece] = []
        for piece in pieces {
            if let last = current.last, continues(last, piece) {
                current.append(piece)
            } else {
                if !current.isEmpty { sets.append(make(current, byName: byName && current.count > 1)) }
                current = [piece]
            }
        }
        if !current.isEmpty { sets.append(make(current, byName: byName && current.count > 1)) }
        return sets
    }

    static func make(_ pieces: [CaptureSet.Piece], byName: Bool) -> CaptureSet {
        CaptureSet(name: pieces.count > 1 ? setName(pieces.map(\.stem)) : pieces[0].stem, pieces: pieces, joinedByName: byName)
    }

    /// The name with its digit runs as "#", a trailing run dropped (tcpdump -C's first file has
    /// no number: `trace.pcap`, then `trace.pcap1`).
    static func nameKey(_ name: String) -> String {
        var out = ""
        var inDigits = false
        for c in name {
            if c.isASCII && c.isNumber {
                if !inDigits { out.append("#") }
                inDigits = true
            } else {
                out.append(c)
                inDigits = false
            }
        }
        if out.hasSuffix("#") { out.removeLast() }
        // icy-sniff's own -C rotation (and its name taken: the next number) puts the counter
        // before the extension, the first file without it: `x.pcap`, `x.1.pcap`, `x.2.pcap`.
        let chars = Array(out)
        if let i = (0..<max(0, chars.count - 2)).last(where: { chars[$0] == "." && chars[$0 + 1] == "#" && chars[$0 + 2] == "." }) {
            out = String(chars[..<i]) + String(chars[(i + 2)...])
        }
        return out
    }

    /// The digit runs of a name, as numbers (runs too long for an Int count as 0).
    static func digitRuns(_ name: String) -> [Int] { digitRunTexts(name).map { Int($0.prefix(18)) ?? 0 } }

    /// The sequence number at `position` (tcpdump -C's first file, without the trailing run: 0).
    static func sequence(_ runs: [Int], _ position: Int) -> Int { position < runs.count ? runs[position] : 0 }

    /// The digit run that counts the pieces, given in the order of their first packets: it
    /// increases along that order in small steps (a counter, not a date). A trailing counter may
    /// be missing on the first file (tcpdump -C).
    static func counterPosition(_ runs: [[Int]]) -> Int? {
        let longest = runs.map(\.count).max() ?? 0
        for position in 0..<longest {
            let values = runs.map { sequence($0, position) }
            guard values.count > 1, zip(values, values.dropFirst()).allSatisfy({ $0 < $1 }) else { continue }
            if values.last! - values.first! <= 4 * values.count + 8 { return position }
        }
        return nil
    }

    /// Whether a digit run of the name begins with the year of `time` (UTC, or the year before
    /// or after: a local-time name at New Year): `%Y`, `%Y%m%d…` in a strftime name.
    static func namesItsYear(_ name: String, _ time: Timestamp) -> Bool {
        guard let year = Int(time.iso8601(fractionDigits: 0).prefix(4)) else { return false }
        var current = ""
        for c in name + " " {
            if c.isASCII && c.isNumber { current.append(c); continue }
            if current.count >= 4, let y = Int(current.prefix(4)), abs(y - year) <= 1 { return true }
            current = ""
        }
        return false
    }

    /// A set's name: the first piece's stem without the digit runs that number or date its
    /// pieces, and the separators around them (`cap_00001_20261123101500` → `cap`,
    /// `trace.pcap1` → `trace.pcap`), or the stem when nothing would be left. A digit run that
    /// is part of a word stays: inside one (`h2c-sample1` → `h2c-sample`), or touching one and
    /// the same in every piece (`cam2_00001`, `cam2_00002` → `cam2`).
    static func setName(_ stems: [String]) -> String {
        guard let stem = stems.first else { return "" }
        let folder = stem.contains("/") ? Path.folder(stem) + "/" : ""
        let base = Array(Path.name(stem))
        let others = stems.dropFirst().map { digitRunTexts(Path.name($0)) }
        func isDigit(_ c: Character) -> Bool { c.isASCII && c.isNumber }
        func isLetter(_ c: Character) -> Bool { c.isLetter }
        var out = ""
        var i = 0, run = 0
        while i < base.count {
            guard isDigit(base[i]) else {
                let c = base[i]
                if !("-_.:".contains(c) && (out.last.map { "-_.:".contains($0) } ?? false)) { out.append(c) }
                i += 1
                continue
            }
            var j = i
            while j < base.count && isDigit(base[j]) { j += 1 }
            let digits = String(base[i..<j])
            let before = i > 0 && isLetter(base[i - 1]), after = j < base.count && isLetter(base[j])
            let same = others.allSatisfy { run < $0.count && $0[run] == digits }
            if (before && after) || ((before || after) && same && !others.isEmpty) { out += digits }
            run += 1
            i = j
        }
        while let last = out.last, "-_.:".contains(last) { out.removeLast() }
        return out.isEmpty ? stem : folder + out
    }

    static func setName(_ stem: String) -> String { setName([stem]) }

    /// The digit runs of a name, as written.
    static func digitRunTexts(_ name: String) -> [String] {
        var runs: [String] = []
        var current = ""
        for c in name + " " {
            if c.isASCII && c.isNumber { current.append(c) } else if !current.isEmpty { runs.append(current); current = "" }
        }
        return runs
    }
}

/// The two path operations the grouping needs ("a/b/c" → "a/b" and "c").
enum Path {
    static func name(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    static func folder(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

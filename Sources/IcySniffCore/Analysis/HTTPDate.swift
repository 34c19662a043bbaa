/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, rfc850-date and asctime-date, matched
/// case-insensitively (RFC 9111 §4.2). Any other form, or a zone other than GMT, is invalid.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// Seconds since the epoch, or nil when `text` is not a valid HTTP-date.
    /// `now` resolves rfc850's two-digit year (RFC 9110 §5.6.7: more than 50 years ahead means the past century).
    static func parse(_ text: String, now: Timestamp? = nil) -> Int64? {
        let s = text.trimmingCharacters(in: " \t").lowercased()
        let parts = s.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
        if parts.count == 6, parts[0].hasSuffix(","), shortDays.contains(String(parts[0].dropLast())) {
            guard parts[5] == "gmt", parts[1].count == 2, let day = Int64(parts[1]),
                  let month = months.firstIndex(of: parts[2]), parts[3].count == 4, let year = Int64(parts[3]),
                  let time = clock(parts[4]) else { return nil }
            return make(year, Int64(month + 1), day, time)
        }
        // rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT"
        if parts.count == 4, parts[0].hasSuffix(","), longDays.contains(String(parts[0].dropLast())) {
            let dmy = parts[1].split(separator: "-").map(String.init)
            guard parts[3] == "gmt", dmy.count == 3, dmy[0].count == 2, let day = Int64(dmy[0]),
                  let month = months.firstIndex(of: dmy[1]), dmy[2].count == 2, let yy = Int64(dmy[2]),
                  let time = clock(parts[2]) else { return nil }
            let currentYear = now.map { Timestamp.civil(fromDays: $0.nanoseconds / 1_000_000_000 / 86_400).0 } ?? 2000
            var year = (currentYear / 100) * 100 + yy
            if year > currentYear + 50 { year -= 100 }
            return make(year, Int64(month + 1), day, time)
        }
        // asctime-date: "Sun Nov  6 08:49:37 1994"
        if parts.count == 5, shortDays.contains(parts[0]) {
            guard let month = months.firstIndex(of: parts[1]), parts[2].count <= 2, let day = Int64(parts[2]),
                  let time = clock(parts[3]), parts[4].count == 4, let year = Int64(parts[4]) else { return nil }
            return make(year, Int64(month + 1), day, time)
        }
        return nil
    }

    private static func clock(_ s: String) -> Int64? {
        let p = s.split(separator: ":").map(String.init)
        guard p.count == 3, p.allSatisfy({ $0.count == 2 }), let h = Int64(p[0]), let m = Int64(p[1]), let sec = Int64(p[2]),
              h < 24, m < 60, sec <= 60 else { return nil }
        return h * 3600 + m * 60 + sec
    }

    private static func make(_ y: Int64, _ m: Int64, _ d: Int64, _ time: Int64) -> Int64? {
        guard d >= 1 && d <= 31 else { return nil }
        return Timestamp.days(fromCivil: y, m, d) * 86_400 + time
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        var s = self[...]
        while let f = s.first, chars.contains(f) { s.removeFirst() }
        while let l = s.last, chars.contains(l) { s.removeLast() }
        return String(s)
    }
}

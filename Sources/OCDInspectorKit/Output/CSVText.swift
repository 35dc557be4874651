/// Writes CSV as RFC 4180 describes it: fields with a comma, a quote or a line break are quoted,
/// quotes inside them doubled; lines end with CRLF.
enum CSVText {
    /// One record as a CSV line, with its line break.
    static func line(_ fields: [String]) -> String {
        fields.map(quoted).joined(separator: ",") + "\r\n"
    }

    private static func quoted(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// Reads CSV text (RFC 4180: quoted fields may hold commas, doubled quotes and line breaks),
/// keeping the line each record starts on for error messages.
enum CSVReader {
    /// One record: its fields and the 1-based line where it starts. An empty unquoted field is
    /// nil; a quoted empty field (`""`) is an empty string.
    struct Record {
        let line: Int
        let fields: [String?]
    }

    /// Splits `text` into records; blank lines are skipped.
    static func records(in text: String) throws -> [Record] {
        let characters = Array(text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text)
        var records: [Record] = []
        var fields: [String?] = []
        var field = ""
        var quoted = false
        var inQuotes = false
        var line = 1
        var recordLine = 1
        var index = 0

        func endField() {
            fields.append(field.isEmpty && !quoted ? nil : field)
            field = ""
            quoted = false
        }
        func endRecord() {
            endField()
            if !(fields.count == 1 && fields[0] == nil) { records.append(Record(line: recordLine, fields: fields)) }
            fields = []
        }

        while index < characters.count {
            let character = characters[index]
            if inQuotes {
                if character == "\"" {
                    if index + 1 < characters.count && characters[index + 1] == "\"" {
                        field.append("\"")
                        index += 1
                    } else {
                        inQuotes = false
                    }
                } else {
                    if character.isNewline { line += 1 }
                    field.append(character)
                }
            } else if character == "\"" {
                guard field.isEmpty && !quoted else {
                    throw InspectorError("line \(line): a quote inside an unquoted field (quote the whole field and double the quote)")
                }
                inQuotes = true
                quoted = true
            } else if character == "," {
                endField()
            } else if character.isNewline {
                endRecord()
                line += 1
                recordLine = line
            } else {
                guard !quoted else { throw InspectorError("line \(line): text after the closing quote of a field") }
                field.append(character)
            }
            index += 1
        }
        if inQuotes { throw InspectorError("line \(recordLine): a quoted field is not closed") }
        if !field.isEmpty || quoted || !fields.isEmpty { endRecord() }
        return records
    }
}

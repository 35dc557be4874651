import Foundation

/// A format specifier such as `%@`, `%K`, `%d`, `%2$@`.
struct FormatSpecifier: Equatable {
    /// The conversion character: `@`, `K`, `d`, `i`, `u`, `x`, `f`, `e`, `g`, `s`, `c`, …
    var conversion: Character
    /// Explicit 1-based argument position (`%2$@`), if given.
    var position: Int?
    /// The specifier as written, for messages.
    var text: String
}

enum NumberLiteral: Equatable {
    case int(Int64)
    case uint(UInt64)
    case double(Double)
}

enum Punctuation: String, Equatable {
    case leftParen = "("
    case rightParen = ")"
    case leftBrace = "{"
    case rightBrace = "}"
    case leftBracket = "["
    case rightBracket = "]"
    case comma = ","
    case dot = "."
    case colon = ":"
    case assign = ":="
    case plus = "+"
    case minus = "-"
    case star = "*"
    case slash = "/"
    case power = "**"
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case and = "&&"
    case or = "||"
    case not = "!"
}

enum TokenKind: Equatable {
    /// A plain identifier; `upper` is its uppercased form for keyword matching.
    case identifier(String, upper: String)
    /// `#name`: always a key, never a keyword.
    case escapedIdentifier(String)
    /// `@name` (collection operators such as `@count`).
    case atIdentifier(String)
    /// `$name`.
    case variable(String)
    case number(NumberLiteral)
    case string(String)
    case argument(FormatSpecifier)
    case punctuation(Punctuation)
    case end
}

struct Token {
    var kind: TokenKind
    /// Offset of the first scalar.
    var start: Int
    var end: Int

    /// A short description for error messages.
    var display: String {
        switch kind {
        case .identifier(let name, _): return "'\(name)'"
        case .escapedIdentifier(let name): return "'#\(name)'"
        case .atIdentifier(let name): return "'@\(name)'"
        case .variable(let name): return "'$\(name)'"
        case .number(let n):
            switch n {
            case .int(let v): return "number \(v)"
            case .uint(let v): return "number \(v)"
            case .double(let v): return "number \(v)"
            }
        case .string(let s): return "string \"\(s)\""
        case .argument(let spec): return "'\(spec.text)'"
        case .punctuation(let p): return "'\(p.rawValue)'"
        case .end: return "end of input"
        }
    }
}

/// Splits a format string into tokens. Offsets are in Unicode scalars; errors convert them to
/// character offsets.
struct PredicateLexer {
    let format: String
    let scalars: [Unicode.Scalar]
    var index = 0
    /// Shared by the copies of the lexer (the parser's included).
    private let characterOffsets = CharacterOffsets()

    init(_ format: String) {
        self.format = format
        self.scalars = Array(format.unicodeScalars)
    }

    /// The character offsets of `format`'s scalar offsets, worked out on the first error and
    /// kept: the parser tries alternatives and makes an error for each that fails, and walking
    /// the format's characters for each one made some inputs take seconds (a fuzzer found
    /// `TERNARY((TERNARY((…` at 1.4 KB taking 29 s).
    private final class CharacterOffsets {
        /// `table[s]`: how many characters start before scalar offset `s`.
        private var table: [Int] = []

        func characterOffset(_ scalarOffset: Int, in format: String) -> Int {
            if table.isEmpty {
                var characters = 0
                table.append(0)
                for character in format {
                    characters += 1
                    for _ in character.unicodeScalars { table.append(characters) }
                }
            }
            return table[Swift.min(Swift.max(scalarOffset, 0), table.count - 1)]
        }
    }

    func error(_ message: String, at offset: Int, expected: String? = nil, found: String? = nil,
               kind: PredicateFormatError.Kind = .syntax) -> PredicateFormatError {
        PredicateFormatError(kind: kind, message: message, position: characterOffsets.characterOffset(offset, in: format),
                       expected: expected, found: found, format: format)
    }

    mutating func tokenize() throws -> [Token] {
        var tokens: [Token] = []
        while true {
            let token = try next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        let i = index + offset
        return i < scalars.count ? scalars[i] : nil
    }

    static func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        c == "_" || c.properties.isAlphabetic
    }

    static func isIdentifierPart(_ c: Unicode.Scalar) -> Bool {
        c == "_" || c.properties.isAlphabetic || ("0"..."9").contains(c) || c.properties.numericType == .decimal
    }

    private mutating func identifier() -> String {
        var text = String.UnicodeScalarView()
        while let c = peek(), Self.isIdentifierPart(c) {
            text.append(c)
            index += 1
        }
        return String(text)
    }

    mutating func next() throws -> Token {
        while let c = peek(), c.properties.isWhitespace { index += 1 }
        let start = index
        guard let c = peek() else { return Token(kind: .end, start: start, end: start) }

        func punct(_ p: Punctuation, length: Int) -> Token {
            index += length
            return Token(kind: .punctuation(p), start: start, end: index)
        }

        switch c {
        case "(": return punct(.leftParen, length: 1)
        case ")": return punct(.rightParen, length: 1)
        case "{": return punct(.leftBrace, length: 1)
        case "}": return punct(.rightBrace, length: 1)
        case "[": return punct(.leftBracket, length: 1)
        case "]": return punct(.rightBracket, length: 1)
        case ",": return punct(.comma, length: 1)
        case "+": return punct(.plus, length: 1)
        case "-": return punct(.minus, length: 1)
        case "/": return punct(.slash, length: 1)
        case "*": return peek(1) == "*" ? punct(.power, length: 2) : punct(.star, length: 1)
        case ":": return peek(1) == "=" ? punct(.assign, length: 2) : punct(.colon, length: 1)
        case "=":
            if peek(1) == "=" { return punct(.equal, length: 2) }
            if peek(1) == "<" { return punct(.lessOrEqual, length: 2) }
            if peek(1) == ">" { return punct(.greaterOrEqual, length: 2) }
            return punct(.equal, length: 1)
        case "!": return peek(1) == "=" ? punct(.notEqual, length: 2) : punct(.not, length: 1)
        case "<":
            if peek(1) == "=" { return punct(.lessOrEqual, length: 2) }
            if peek(1) == ">" { return punct(.notEqual, length: 2) }
            return punct(.less, length: 1)
        case ">":
            return peek(1) == "=" ? punct(.greaterOrEqual, length: 2) : punct(.greater, length: 1)
        case "&":
            if peek(1) == "&" { return punct(.and, length: 2) }
            throw error("'&' is not an operator", at: start, expected: "'&&'", found: "'&'")
        case "|":
            if peek(1) == "|" { return punct(.or, length: 2) }
            throw error("'|' is not an operator", at: start, expected: "'||'", found: "'|'")
        case ".":
            if let d = peek(1), ("0"..."9").contains(d) { return try number() }
            return punct(.dot, length: 1)
        case "\"", "'":
            return try string()
        case "%":
            return try specifier()
        case "$":
            index += 1
            guard let first = peek(), Self.isIdentifierStart(first) else {
                throw error("a variable needs a name", at: start, expected: "a variable name after '$'", found: describe(peek()))
            }
            let name = identifier()
            return Token(kind: .variable(name), start: start, end: index)
        case "#":
            index += 1
            guard let first = peek(), Self.isIdentifierStart(first) else {
                throw error("'#' must be followed by a name", at: start, expected: "a key name after '#'", found: describe(peek()))
            }
            let name = identifier()
            return Token(kind: .escapedIdentifier(name), start: start, end: index)
        case "@":
            index += 1
            guard let first = peek(), Self.isIdentifierStart(first) else {
                throw error("'@' must be followed by a name", at: start, expected: "a collection operator such as @count", found: describe(peek()))
            }
            let name = identifier()
            return Token(kind: .atIdentifier(name), start: start, end: index)
        default:
            if ("0"..."9").contains(c) { return try number() }
            if Self.isIdentifierStart(c) {
                let name = identifier()
                return Token(kind: .identifier(name, upper: name.uppercased()), start: start, end: index)
            }
            throw error("unexpected character '\(Character(c))'", at: start, expected: "an expression or operator", found: "'\(Character(c))'")
        }
    }

    private func describe(_ c: Unicode.Scalar?) -> String {
        guard let c else { return "end of input" }
        return "'\(Character(c))'"
    }

    private mutating func number() throws -> Token {
        let start = index
        if peek() == "0", let marker = peek(1), let radix = ["x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2][Character(marker)] {
            index += 2
            var digits = ""
            while let c = peek(), c == "_" || Character(c).isHexDigit {
                if c != "_" { digits.unicodeScalars.append(c) }
                index += 1
            }
            guard !digits.isEmpty, let value = UInt64(digits, radix: radix) else {
                throw error("malformed number literal", at: start, expected: "digits of base \(radix)",
                            found: digits.isEmpty ? describe(peek()) : "'\(digits)'")
            }
            let literal: NumberLiteral = value <= UInt64(Int64.max) ? .int(Int64(value)) : .uint(value)
            return Token(kind: .number(literal), start: start, end: index)
        }
        var text = ""
        var isFloat = false
        while let c = peek(), ("0"..."9").contains(c) { text.unicodeScalars.append(c); index += 1 }
        if peek() == ".", let d = peek(1), ("0"..."9").contains(d) {
            isFloat = true
            text.append(".")
            index += 1
            while let c = peek(), ("0"..."9").contains(c) { text.unicodeScalars.append(c); index += 1 }
        }
        if let e = peek(), e == "e" || e == "E" {
            var lookahead = 1
            if let sign = peek(1), sign == "+" || sign == "-" { lookahead = 2 }
            if let d = peek(lookahead), ("0"..."9").contains(d) {
                isFloat = true
                text.append("e")
                if lookahead == 2, let sign = peek(1) { text.unicodeScalars.append(sign) }
                index += lookahead
                while let c = peek(), ("0"..."9").contains(c) { text.unicodeScalars.append(c); index += 1 }
            }
        }
        if let c = peek(), Self.isIdentifierStart(c) {
            throw error("malformed number literal", at: start, expected: "a number", found: "'\(text)\(Character(c))'")
        }
        if text.hasPrefix(".") { text = "0" + text }
        if !isFloat {
            if let value = Int64(text) { return Token(kind: .number(.int(value)), start: start, end: index) }
            if let value = UInt64(text) { return Token(kind: .number(.uint(value)), start: start, end: index) }
        }
        guard let value = Double(text) else {
            throw error("malformed number literal", at: start, expected: "a number", found: "'\(text)'")
        }
        return Token(kind: .number(.double(value)), start: start, end: index)
    }

    private mutating func string() throws -> Token {
        let start = index
        let quote = scalars[index]
        index += 1
        var text = String.UnicodeScalarView()
        while true {
            guard let c = peek() else {
                throw error("unterminated string literal", at: start, expected: "a closing \(quote == "\"" ? "double" : "single") quote",
                            found: "end of input")
            }
            index += 1
            if c == quote { break }
            guard c == "\\" else { text.append(c); continue }
            guard let e = peek() else {
                throw error("unterminated string literal", at: start, expected: "a closing quote", found: "end of input")
            }
            index += 1
            switch e {
            case "n": text.append("\n")
            case "t": text.append("\t")
            case "r": text.append("\r")
            case "a": text.append("\u{07}")
            case "b": text.append("\u{08}")
            case "f": text.append("\u{0C}")
            case "v": text.append("\u{0B}")
            case "\"", "'", "\\": text.append(e)
            case "u", "x":
                let length = e == "u" ? 4 : 2
                var hex = ""
                for _ in 0..<length {
                    guard let h = peek(), Character(h).isHexDigit else { break }
                    hex.unicodeScalars.append(h)
                    index += 1
                }
                guard hex.count == length, let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
                    throw error("malformed escape sequence", at: index - hex.count - 2,
                                expected: "\(length) hexadecimal digits after '\\\(Character(e))'", found: "'\(hex)'")
                }
                text.append(scalar)
            case "0"..."7":
                var octal = String(Character(e))
                while octal.count < 3, let o = peek(), ("0"..."7").contains(o) {
                    octal.unicodeScalars.append(o)
                    index += 1
                }
                if let value = UInt32(octal, radix: 8), let scalar = Unicode.Scalar(value) { text.append(scalar) }
            default:
                // Unknown escapes are kept with their backslash, so regular expressions such as
                // '\d+' survive inside MATCHES patterns.
                text.append("\\")
                text.append(e)
            }
        }
        return Token(kind: .string(String(text)), start: start, end: index)
    }

    private mutating func specifier() throws -> Token {
        let start = index
        index += 1
        if peek() == "%" {
            index += 1
            return Token(kind: .string("%"), start: start, end: index)
        }
        var position: Int?
        var digits = ""
        var probe = index
        while probe < scalars.count, ("0"..."9").contains(scalars[probe]) {
            digits.unicodeScalars.append(scalars[probe])
            probe += 1
        }
        if !digits.isEmpty, probe < scalars.count, scalars[probe] == "$" {
            position = Int(digits)
            index = probe + 1
            if position == 0 {
                throw error("argument positions start at 1", at: start, expected: "%1$… or higher", found: "'%0$'")
            }
        }
        while let c = peek(), "hlqLzjt".unicodeScalars.contains(c) { index += 1 }
        guard let conversion = peek() else {
            throw error("incomplete format specifier", at: start, expected: "a conversion such as %@ or %K", found: "end of input")
        }
        guard "@KdiouxXDOUfFeEgGaAsSc".unicodeScalars.contains(conversion) else {
            throw error("unsupported format specifier", at: start, expected: "%@, %K, %d, %f or %s",
                        found: "'%\(Character(conversion))'")
        }
        index += 1
        let text = String(String.UnicodeScalarView(scalars[start..<index]))
        return Token(kind: .argument(FormatSpecifier(conversion: Character(conversion), position: position, text: text)),
                     start: start, end: index)
    }
}

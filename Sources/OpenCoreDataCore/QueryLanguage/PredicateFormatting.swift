import Foundation

/// Prints predicates and expressions as format strings that parse back to equal trees.
///
/// Constants print as literals: strings double-quoted with backslash escapes, numbers in
/// decimal, Bool as YES/NO, nil as `nil`, collections as `{…}` (sets in sorted order), and
/// values without a literal form as casts: `CAST(<seconds since 2001>, "NSDate")`,
/// `CAST("<decimal>", "NSDecimalNumber")`, `CAST("<base64>", "NSData")`,
/// `CAST("<uuid>", "NSUUID")`, `CAST("<url>", "NSURL")`. Objects print their description
/// (which does not parse back). Keys that collide with reserved words get a `#` prefix.
enum PredicateFormatter {
    /// Words printed with a `#` prefix when they are used as keys.
    static let escapedWords: Set<String> = PredicateParser.reservedWords.union([
        "FIRST", "LAST", "SIZE", "SUBQUERY", "FUNCTION", "CAST", "TERNARY", "FETCH",
        "CASEINSENSITIVE", "CI", "UTI", "BLOCK",
    ])

    // MARK: - Predicates

    static func format(_ predicate: NSPredicate) -> String {
        switch predicate.content {
        case .invalid(let text): return text
        case .constant(let value): return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .block: return "BLOCKPREDICATE(\(String(describing: ObjectIdentifier(predicate))))"
        case .subclass: break
        }
        if let comparison = predicate as? NSComparisonPredicate { return format(comparison) }
        if let compound = predicate as? NSCompoundPredicate { return format(compound) }
        return String(describing: Swift.type(of: predicate))
    }

    static func format(_ p: NSComparisonPredicate) -> String {
        let left = format(p.leftExpression)
        let right = format(p.rightExpression)
        if let selector = p.customSelector {
            return "\(left) \(selector.name) \(right)"
        }
        var text = ""
        switch p.comparisonPredicateModifier {
        case .direct: break
        case .any: text = "ANY "
        case .all: text = "ALL "
        }
        text += left + " " + operatorText(p.predicateOperatorType)
        var letters = ""
        if p.options.contains(.caseInsensitive) { letters += "c" }
        if p.options.contains(.diacriticInsensitive) { letters += "d" }
        if p.options.contains(.normalized) { letters += "n" }
        if !letters.isEmpty { text += "[\(letters)]" }
        return text + " " + right
    }

    static func operatorText(_ type: NSComparisonPredicate.Operator) -> String {
        switch type {
        case .lessThan: return "<"
        case .lessThanOrEqualTo: return "<="
        case .greaterThan: return ">"
        case .greaterThanOrEqualTo: return ">="
        case .equalTo: return "=="
        case .notEqualTo: return "!="
        case .matches: return "MATCHES"
        case .like: return "LIKE"
        case .beginsWith: return "BEGINSWITH"
        case .endsWith: return "ENDSWITH"
        case .in: return "IN"
        case .customSelector: return "FUNCTION"
        case .contains: return "CONTAINS"
        case .between: return "BETWEEN"
        }
    }

    static func format(_ p: NSCompoundPredicate) -> String {
        func wrapped(_ sub: NSPredicate) -> String {
            if let compound = sub as? NSCompoundPredicate, compound.formatError == nil,
               compound.compoundPredicateType != .not {
                return "(" + format(compound) + ")"
            }
            return format(sub)
        }
        switch p.compoundPredicateType {
        case .not:
            if p.predicates.count == 1 { return "NOT " + wrapped(p.predicates[0]) }
            return "NOT (" + format(NSCompoundPredicate(type: .and, subpredicates: p.predicates)) + ")"
        case .and:
            if p.predicates.isEmpty { return "TRUEPREDICATE" }
            return p.predicates.map(wrapped).joined(separator: " AND ")
        case .or:
            if p.predicates.isEmpty { return "FALSEPREDICATE" }
            return p.predicates.map(wrapped).joined(separator: " OR ")
        }
    }

    // MARK: - Expressions

    static func format(_ e: NSExpression) -> String {
        if let invalid = e.invalidFormat { return invalid }
        switch e.node {
        case .constant(let value):
            return literal(value)
        case .evaluatedObject:
            return "SELF"
        case .variable(let name):
            return "$" + name
        case .keyPath(let operand, _, let components):
            let path = components.map(component).joined(separator: ".")
            guard let operand else { return path }
            return operandText(operand) + "." + path
        case .function(let name, let receiver, let arguments):
            if let receiver {
                let rest = arguments.map { ", " + format($0) }.joined()
                return "FUNCTION(\(format(receiver)), \(quoted(name))\(rest))"
            }
            if let function = e.builtin {
                if let symbol = function.infixOperator, arguments.count == 2 {
                    return operandText(arguments[0]) + " " + symbol + " " + operandText(arguments[1])
                }
                if function == .objectFromIndex, arguments.count == 2 {
                    return operandText(arguments[0]) + "[" + format(arguments[1]) + "]"
                }
                if function == .castObject, arguments.count == 2 {
                    return "CAST(\(format(arguments[0])), \(format(arguments[1])))"
                }
            }
            return name + "(" + arguments.map(format).joined(separator: ", ") + ")"
        case .aggregate(let items):
            return "{" + items.map(format).joined(separator: ", ") + "}"
        case .union(let a, let b):
            return operandText(a) + " UNION " + operandText(b)
        case .intersect(let a, let b):
            return operandText(a) + " INTERSECT " + operandText(b)
        case .minus(let a, let b):
            return operandText(a) + " MINUS " + operandText(b)
        case .subquery(let collection, let variable, let predicate):
            return "SUBQUERY(\(format(collection)), $\(variable), \(format(predicate)))"
        case .anyKey:
            return "ANYKEY"
        case .block(_, let arguments):
            return "BLOCK(" + arguments.map(format).joined(separator: ", ") + ")"
        case .conditional(let predicate, let t, let f):
            return "TERNARY(\(format(predicate)), \(format(t)), \(format(f)))"
        }
    }

    /// An expression used as an operand of an infix operator, a key path or a subscript:
    /// parenthesised when it is itself an infix operation or a negative number.
    static func operandText(_ e: NSExpression) -> String {
        let text = format(e)
        switch e.node {
        case .function(_, nil, let arguments) where e.builtin?.infixOperator != nil && arguments.count == 2:
            return "(" + text + ")"
        case .union, .intersect, .minus:
            return "(" + text + ")"
        case .constant:
            return text.hasPrefix("-") ? "(" + text + ")" : text
        default:
            return text
        }
    }

    static func component(_ c: KeyPathComponent) -> String {
        switch c {
        case .collectionOperator(let op): return op.rawValue
        case .key(let key): return keyText(key)
        }
    }

    /// A key as written in a format: `#`-escaped when it is a reserved word.
    static func keyText(_ key: String) -> String {
        let scalars = key.unicodeScalars
        guard let first = scalars.first, PredicateLexer.isIdentifierStart(first),
              scalars.allSatisfy(PredicateLexer.isIdentifierPart) else { return key }
        return escapedWords.contains(key.uppercased()) ? "#" + key : key
    }

    // MARK: - Literals

    static func literal(_ value: Any?) -> String {
        if let symbol = value as? PredicateIndexSymbol { return symbol.rawValue }
        if let value, Swift.type(of: value) == Bool.self { return (value as! Bool) ? "YES" : "NO" }
        switch PredicateValue.classify(value) {
        case .null:
            return "nil"
        case .number(let n):
            switch n {
            case .int(let v): return String(v)
            case .uint(let v): return String(v)
            case .double(let v):
                if v.isFinite { return "\(v)" }
                return "CAST(\(quoted(v.isNaN ? "nan" : (v > 0 ? "inf" : "-inf"))), \"NSNumber\")"
            case .decimal(let v):
                return "CAST(\(quoted(NSDecimalNumber(decimal: v).description(withLocale: Locale(identifier: "en_US_POSIX")))), \"NSDecimalNumber\")"
            }
        case .string(let s):
            return quoted(s)
        case .date(let d):
            return "CAST(\(d.timeIntervalSinceReferenceDate), \"NSDate\")"
        case .data(let d):
            return "CAST(\(quoted(d.base64EncodedString())), \"NSData\")"
        case .uuid(let u):
            return "CAST(\(quoted(u.uuidString)), \"NSUUID\")"
        case .url(let u):
            return "CAST(\(quoted(u.absoluteString)), \"NSURL\")"
        case .collection(let elements, let ordered):
            var items = elements
            if !ordered {
                items.sort { ValueComparison.sortCompare($0, $1) == .orderedAscending }
            }
            return "{" + items.map(literal).joined(separator: ", ") + "}"
        case .object(let object):
            return String(describing: object)
        case .other(let other):
            return String(describing: other.value)
        }
    }

    /// A double-quoted string literal with backslash escapes.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u" + String(format: "%04X", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

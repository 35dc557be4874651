import Foundation

/// Recursive-descent parser for predicate and expression format strings.
///
/// Grammar (keywords are case-insensitive):
///
///     predicate   := or
///     or          := and (("OR" | "||") and)*
///     and         := not (("AND" | "&&") not)*
///     not         := ("NOT" | "!") not | primary
///     primary     := "(" predicate ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
///     comparison  := ["ANY" | "SOME" | "ALL" | "NONE"] expression ["NOT"] operator [options] expression
///     operator    := "=" | "==" | "!=" | "<>" | "<" | "<=" | "=<" | ">" | ">=" | "=>" | "BEGINSWITH"
///                  | "ENDSWITH" | "CONTAINS" | "LIKE" | "MATCHES" | "IN" | "BETWEEN"
///     options     := "[" letters from c, d, n, l "]"
///     expression  := additive (("UNION" | "INTERSECT" | "MINUS") additive)*
///     additive    := multiplicative (("+" | "-") multiplicative)*
///     multiplicative := unary (("*" | "/") unary)*
///     unary       := ("-" | "+") unary | power
///     power       := postfix ["**" unary]
///     postfix     := primaryExpr ("." keyComponent | "[" index "]")*
///     primaryExpr := number | string | %@ | %K | %d … | $variable | key | #key | @operator
///                  | NULL | NIL | TRUE | YES | FALSE | NO | SELF | ANYKEY | "{" [expression ("," expression)*] "}"
///                  | "(" expression ")" | SUBQUERY(expr, $var, predicate) | FUNCTION(expr, 'selector', expr…)
///                  | CAST(expr, 'Type') | TERNARY(predicate, expr, expr) | name "(" args ")" | selector:(args)
struct PredicateParser {
    let lexer: PredicateLexer
    let tokens: [Token]
    let arguments: [Any?]
    var position = 0
    var nextArgument = 0
    var depth = 0
    /// The deepest `depth` reached so far (for reusing a memoized predicate at another depth).
    var deepest = 0
    /// Parentheses open around the expression being parsed (limited apart from `depth`, since
    /// they add no level to the tree and the printer adds some of its own).
    var parentheses = 0
    /// Predicates parsed so far (memoized ones not counted again); see `maximumParsesPerToken`.
    var parses = 0

    static let maximumDepth = 200
    /// The parse of a format stops with `tooComplex` after this many predicates per token. The
    /// memo below parses each predicate once per depth it is reached at, but nested parentheses
    /// tried both ways can still reach one start at many depths: a 1.4 KB `TERNARY((TERNARY((…`
    /// the fuzzer found took 8 s. Real formats parse about one predicate per few tokens.
    static let maximumParsesPerToken = 16

    /// Words that cannot be used as keys without a `#` prefix.
    static let reservedWords: Set<String> = [
        "AND", "OR", "NOT", "IN", "ALL", "ANY", "SOME", "NONE", "LIKE", "MATCHES", "CONTAINS",
        "BEGINSWITH", "ENDSWITH", "BETWEEN", "NULL", "NIL", "SELF", "TRUE", "YES", "FALSE", "NO",
        "TRUEPREDICATE", "FALSEPREDICATE", "ANYKEY", "UNION", "INTERSECT", "MINUS",
    ]

    static func parsePredicate(_ format: String, arguments: [Any?]) throws -> NSPredicate {
        var parser = try PredicateParser(format, arguments: arguments)
        let predicate = try parser.parseOr()
        guard case .end = parser.current.kind else {
            throw parser.failure("unexpected text after the end of the predicate", expected: "AND, OR or the end of the format")
        }
        return predicate
    }

    static func parseExpression(_ format: String, arguments: [Any?]) throws -> NSExpression {
        var parser = try PredicateParser(format, arguments: arguments)
        let expression = try parser.parseExpression()
        guard case .end = parser.current.kind else {
            throw parser.failure("unexpected text after the end of the expression", expected: "an operator or the end of the format")
        }
        return expression
    }

    init(_ format: String, arguments: [Any?]) throws {
        var lexer = PredicateLexer(format)
        tokens = try lexer.tokenize()
        self.lexer = lexer
        self.arguments = arguments
    }

    // MARK: - Token helpers

    var current: Token { tokens[position] }

    func token(at offset: Int) -> Token {
        tokens[Swift.min(position + offset, tokens.count - 1)]
    }

    mutating func advance() {
        if position < tokens.count - 1 { position += 1 }
    }

    func isPunctuation(_ p: Punctuation, _ token: Token? = nil) -> Bool {
        if case .punctuation(let q) = (token ?? current).kind { return p == q }
        return false
    }

    func isKeyword(_ word: String, _ token: Token? = nil) -> Bool {
        if case .identifier(_, let upper) = (token ?? current).kind { return upper == word }
        return false
    }

    mutating func match(_ p: Punctuation) -> Bool {
        guard isPunctuation(p) else { return false }
        advance()
        return true
    }

    mutating func matchKeyword(_ word: String) -> Bool {
        guard isKeyword(word) else { return false }
        advance()
        return true
    }

    mutating func expect(_ p: Punctuation, _ context: String) throws {
        guard match(p) else { throw failure(context, expected: "'\(p.rawValue)'") }
    }

    func failure(_ message: String, expected: String? = nil, at token: Token? = nil,
                 kind: PredicateFormatError.Kind = .syntax) -> PredicateFormatError {
        let t = token ?? current
        return lexer.error(message, at: t.start, expected: expected, found: t.display, kind: kind)
    }

    /// One level deeper in the tree being built; throws past `maximumDepth`, so that deep input
    /// can't overflow the stack here or in the printer, the evaluator and the tree's release.
    mutating func enter() throws {
        guard depth < Self.maximumDepth else { throw failure(Self.tooDeep, kind: .tooComplex) }
        depth += 1
        deepest = Swift.max(deepest, depth)
    }

    /// `enter()` for a loop that wraps the tree built so far in another node (`a + b + c`,
    /// `a[0][1]`); `levels` counts the levels to give back when the loop's function returns.
    mutating func deepen(_ levels: inout Int) throws {
        try enter()
        levels += 1
    }

    // MARK: - Predicates

    /// A predicate parsed before at a token and argument position: its result and where it ended.
    enum ParsedPredicate {
        /// `height`: how many levels below its start the predicate's tree reaches.
        case parsed(NSPredicate, end: Int, nextArgument: Int, height: Int)
        case failed(PredicateFormatError)
        /// Failed on a limit (an error of kind `tooComplex`), entered this deep: fails again when
        /// entered as deep or deeper.
        case overLimit(PredicateFormatError, depth: Int, parentheses: Int)
    }

    /// Results of `parseOr` by start (token position, next argument). A parenthesis may begin a
    /// predicate or an expression, and the parser tries both; without this, predicates nested in
    /// expressions (`TERNARY((TERNARY((…`) were parsed again for each way, exponentially often.
    var parsedPredicates: [[Int]: ParsedPredicate] = [:]

    mutating func parseOr() throws -> NSPredicate {
        let start = [position, nextArgument]
        switch parsedPredicates[start] {
        case .parsed(let predicate, let end, let argument, let height)? where depth + height <= Self.maximumDepth:
            (position, nextArgument) = (end, argument)
            deepest = Swift.max(deepest, depth + height)
            return predicate
        case .failed(let error)?:
            throw error
        case .overLimit(let error, let failedDepth, let failedParentheses)? where depth >= failedDepth && parentheses >= failedParentheses:
            throw error
        case .parsed?, .overLimit?, nil:
            break
        }
        parses += 1
        guard !isOutOfBudget else { throw failure(Self.tooComplex, kind: .tooComplex) }
        let outerDeepest = deepest
        deepest = depth
        defer { deepest = Swift.max(outerDeepest, deepest) }
        do {
            let predicate = try parseOrUncached()
            parsedPredicates[start] = .parsed(predicate, end: position, nextArgument: nextArgument, height: deepest - depth)
            return predicate
        } catch let error as PredicateFormatError {
            // A failure on a limit depends on how deep the predicate was nested. (The other limit,
            // the budget, once reached fails every parse whatever the depth, so it may be kept
            // the same way.)
            parsedPredicates[start] = error.kind == .tooComplex ? .overLimit(error, depth: depth, parentheses: parentheses) : .failed(error)
            throw error
        }
    }

    static let tooDeep = "the format is nested too deeply"
    static let tooComplex = "the format is too complex to parse (too many nested parentheses to try both ways)"

    /// Whether the parse has used up its budget (see `maximumParsesPerToken`). It only grows, and
    /// the error it raises passes every catch unchanged, so an error caught while it holds is that
    /// one.
    private var isOutOfBudget: Bool { parses > tokens.count * Self.maximumParsesPerToken }

    mutating func parseOrUncached() throws -> NSPredicate {
        try enter()
        defer { depth -= 1 }
        var items = [try parseAnd()]
        while matchKeyword("OR") || match(.or) { items.append(try parseAnd()) }
        return items.count == 1 ? items[0] : NSCompoundPredicate(type: .or, subpredicates: items)
    }

    mutating func parseAnd() throws -> NSPredicate {
        var items = [try parseNot()]
        while matchKeyword("AND") || match(.and) { items.append(try parseNot()) }
        return items.count == 1 ? items[0] : NSCompoundPredicate(type: .and, subpredicates: items)
    }

    mutating func parseNot() throws -> NSPredicate {
        if matchKeyword("NOT") || match(.not) {
            try enter()
            defer { depth -= 1 }
            return NSCompoundPredicate(type: .not, subpredicates: [try parseNot()])
        }
        return try parsePrimaryPredicate()
    }

    func canEndPredicate(_ token: Token) -> Bool {
        switch token.kind {
        case .end: return true
        case .punctuation(let p): return p == .rightParen || p == .comma || p == .and || p == .or
        case .identifier(_, let upper): return upper == "AND" || upper == "OR"
        default: return false
        }
    }

    mutating func parsePrimaryPredicate() throws -> NSPredicate {
        if isPunctuation(.leftParen) {
            // Either a parenthesised predicate or a comparison whose left side starts with a
            // parenthesised expression, e.g. "(a + b) > 3": try the former, then the latter.
            let saved = (position, nextArgument)
            let firstError: PredicateFormatError
            do {
                advance()
                let inner = try parseOr()
                try expect(.rightParen, "missing ')' after a parenthesised predicate")
                if canEndPredicate(current) { return inner }
                throw failure("unexpected text after a parenthesised predicate", expected: "AND, OR or ')'")
            } catch let error as PredicateFormatError {
                // Out of budget: the other way would fail the same way.
                if isOutOfBudget { throw error }
                firstError = error
            }
            (position, nextArgument) = saved
            do {
                return try parseComparison()
            } catch let secondError as PredicateFormatError {
                if isOutOfBudget { throw secondError }
                throw secondError.position > firstError.position ? secondError : firstError
            }
        }
        if matchKeyword("TRUEPREDICATE") { return NSPredicate(value: true) }
        if matchKeyword("FALSEPREDICATE") { return NSPredicate(value: false) }
        return try parseComparison()
    }

    mutating func parseComparison() throws -> NSPredicate {
        var modifier = NSComparisonPredicate.Modifier.direct
        var none = false
        if matchKeyword("ANY") || matchKeyword("SOME") {
            modifier = .any
        } else if matchKeyword("ALL") {
            modifier = .all
        } else if matchKeyword("NONE") {
            modifier = .any
            none = true
        }
        let left = try parseExpression()
        var negated = false
        if isKeyword("NOT"), case .identifier = token(at: 1).kind {
            advance()
            negated = true
        }
        let operatorToken = current
        let type: NSComparisonPredicate.Operator
        switch current.kind {
        case .punctuation(.equal): type = .equalTo
        case .punctuation(.notEqual): type = .notEqualTo
        case .punctuation(.less): type = .lessThan
        case .punctuation(.lessOrEqual): type = .lessThanOrEqualTo
        case .punctuation(.greater): type = .greaterThan
        case .punctuation(.greaterOrEqual): type = .greaterThanOrEqualTo
        case .identifier(_, let upper):
            switch upper {
            case "BEGINSWITH": type = .beginsWith
            case "ENDSWITH": type = .endsWith
            case "CONTAINS": type = .contains
            case "LIKE": type = .like
            case "MATCHES": type = .matches
            case "IN": type = .in
            case "BETWEEN": type = .between
            default:
                throw failure("expected a comparison operator", expected: "a comparison operator such as ==, <, IN, CONTAINS or LIKE")
            }
        default:
            throw failure("expected a comparison operator", expected: "a comparison operator such as ==, <, IN, CONTAINS or LIKE")
        }
        advance()
        if negated, case .punctuation = operatorToken.kind {
            throw failure("NOT can only precede a keyword operator such as IN or LIKE", at: operatorToken)
        }
        let options = try parseOptions()
        guard !isEnd else {
            throw failure("missing right-hand side of the comparison", expected: "an expression")
        }
        let right = try parseExpression()
        var predicate: NSPredicate = NSComparisonPredicate(leftExpression: left, rightExpression: right,
                                                           modifier: modifier, type: type, options: options)
        if negated { predicate = NSCompoundPredicate(type: .not, subpredicates: [predicate]) }
        if none { predicate = NSCompoundPredicate(type: .not, subpredicates: [predicate]) }
        return predicate
    }

    var isEnd: Bool {
        if case .end = current.kind { return true }
        return false
    }

    mutating func parseOptions() throws -> NSComparisonPredicate.Options {
        guard isPunctuation(.leftBracket) else { return [] }
        advance()
        var options: NSComparisonPredicate.Options = []
        guard case .identifier(let letters, _) = current.kind else {
            throw failure("expected comparison options", expected: "option letters c, d or n")
        }
        for letter in letters.lowercased() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n": options.insert(.normalized)
            case "l": break
            default: throw failure("unknown comparison option '\(letter)'", expected: "option letters c, d or n")
            }
        }
        advance()
        try expect(.rightBracket, "missing ']' after comparison options")
        return options
    }

    // MARK: - Expressions

    /// An expression; `counted` is false inside parentheses, which add no level to the tree.
    mutating func parseExpression(counted: Bool = true) throws -> NSExpression {
        if counted { try enter() }
        var levels = counted ? 1 : 0
        defer { depth -= levels }
        var expression = try parseAdditive()
        while true {
            if isKeyword("UNION") || isKeyword("INTERSECT") || isKeyword("MINUS") { try deepen(&levels) }
            if matchKeyword("UNION") {
                expression = NSExpression(forUnionSet: expression, with: try parseAdditive())
            } else if matchKeyword("INTERSECT") {
                expression = NSExpression(forIntersectSet: expression, with: try parseAdditive())
            } else if matchKeyword("MINUS") {
                expression = NSExpression(forMinusSet: expression, with: try parseAdditive())
            } else {
                return expression
            }
        }
    }

    mutating func parseAdditive() throws -> NSExpression {
        var levels = 0
        defer { depth -= levels }
        var expression = try parseMultiplicative()
        while true {
            if isPunctuation(.plus) || isPunctuation(.minus) { try deepen(&levels) }
            if match(.plus) {
                expression = NSExpression(forFunction: "add:to:", arguments: [expression, try parseMultiplicative()])
            } else if match(.minus) {
                expression = NSExpression(forFunction: "from:subtract:", arguments: [expression, try parseMultiplicative()])
            } else {
                return expression
            }
        }
    }

    mutating func parseMultiplicative() throws -> NSExpression {
        var levels = 0
        defer { depth -= levels }
        var expression = try parseUnary()
        while true {
            if isPunctuation(.star) || isPunctuation(.slash) { try deepen(&levels) }
            if match(.star) {
                expression = NSExpression(forFunction: "multiply:by:", arguments: [expression, try parseUnary()])
            } else if match(.slash) {
                expression = NSExpression(forFunction: "divide:by:", arguments: [expression, try parseUnary()])
            } else {
                return expression
            }
        }
    }

    mutating func parseUnary() throws -> NSExpression {
        if match(.minus) {
            try enter()
            defer { depth -= 1 }
            let operand = try parseUnary()
            if case .constant(let value) = operand.node, let negated = Self.negate(value) {
                return NSExpression(forConstantValue: negated)
            }
            return NSExpression(forFunction: "from:subtract:", arguments: [NSExpression(forConstantValue: 0), operand])
        }
        if match(.plus) {
            try enter()
            defer { depth -= 1 }
            return try parseUnary()
        }
        return try parsePower()
    }

    static func negate(_ value: Any?) -> Any? {
        guard case .number(let n) = PredicateValue.classify(value), !(value is Bool) else { return nil }
        switch n {
        case .int(let v): return v == Int64.min ? -Double(v) as Any : Int(-v) as Any
        case .uint(let v): return v == UInt64(Int64.max) + 1 ? Int(Int64.min) as Any : -Double(v) as Any
        case .double(let v): return -v
        case .decimal(let v): return -v
        }
    }

    mutating func parsePower() throws -> NSExpression {
        let base = try parsePostfix()
        if match(.power) {
            try enter()
            defer { depth -= 1 }
            return NSExpression(forFunction: "raise:toPower:", arguments: [base, try parseUnary()])
        }
        return base
    }

    mutating func parsePostfix() throws -> NSExpression {
        var expression = try parsePrimary()
        var levels = 0
        defer { depth -= levels }
        // The keys of a `.a.b.c` run are collected and appended at once: appending them one at a
        // time copied the growing path each time, quadratic in its length.
        var keys: [String] = []
        func appendKeys(_ parser: inout PredicateParser) throws {
            guard !keys.isEmpty else { return }
            switch expression.node {
            case .evaluatedObject, .keyPath: break
            default: try parser.deepen(&levels)
            }
            expression = Self.extend(expression, with: keys.joined(separator: "."))
            keys = []
        }
        while true {
            if isPunctuation(.dot) {
                advance()
                switch current.kind {
                case .identifier(let name, _), .escapedIdentifier(let name): keys.append(name)
                case .argument(let spec) where spec.conversion == "K":
                    let argumentToken = current
                    advance()
                    keys.append(try keyPathArgument(spec, token: argumentToken))
                    continue
                case .atIdentifier(let name):
                    guard let op = CollectionOperator(name: name) else {
                        throw failure("unknown collection operator '@\(name)'", expected: "@count, @sum, @avg, @min, @max or @distinctUnionOfObjects")
                    }
                    keys.append(op.rawValue)
                default:
                    throw failure("expected a key after '.'", expected: "a key name")
                }
                advance()
            } else if isPunctuation(.leftBracket) {
                try appendKeys(&self)
                try deepen(&levels)
                advance()
                let index: NSExpression
                if isKeyword("FIRST") || isKeyword("LAST") || isKeyword("SIZE"),
                   case .identifier(_, let upper) = current.kind, isPunctuation(.rightBracket, token(at: 1)) {
                    index = NSExpression(forConstantValue: PredicateIndexSymbol(rawValue: upper))
                    advance()
                } else {
                    index = try parseExpression()
                }
                try expect(.rightBracket, "missing ']' after an index")
                expression = NSExpression(forFunction: "objectFrom:withIndex:", arguments: [expression, index])
            } else {
                try appendKeys(&self)
                return expression
            }
        }
    }

    /// Appends a key to a key path, or starts a key path at another expression.
    static func extend(_ expression: NSExpression, with component: String) -> NSExpression {
        switch expression.node {
        case .evaluatedObject:
            return NSExpression(forKeyPath: component)
        case .keyPath(let operand, let path, _):
            let joined = path.isEmpty ? component : path + "." + component
            if let operand { return NSExpression(forKeyPath: joined, operand: operand) }
            return NSExpression(forKeyPath: joined)
        default:
            return NSExpression(forKeyPath: component, operand: expression)
        }
    }

    mutating func parsePrimary() throws -> NSExpression {
        let token = current
        switch token.kind {
        case .number(let literal):
            advance()
            switch literal {
            case .int(let v): return NSExpression(forConstantValue: Int(v))
            case .uint(let v): return NSExpression(forConstantValue: v)
            case .double(let v): return NSExpression(forConstantValue: v)
            }
        case .string(let text):
            advance()
            return NSExpression(forConstantValue: text)
        case .argument(let spec):
            advance()
            return try argumentExpression(spec, token: token)
        case .variable(let name):
            advance()
            if isPunctuation(.assign) {
                throw failure("variable assignment (:=) is not supported", kind: .unsupported)
            }
            return NSExpression(forVariable: name)
        case .escapedIdentifier(let name):
            advance()
            return NSExpression(forKeyPath: name)
        case .atIdentifier(let name):
            guard let op = CollectionOperator(name: name) else {
                throw failure("unknown collection operator '@\(name)'", expected: "@count, @sum, @avg, @min, @max or @distinctUnionOfObjects")
            }
            advance()
            return NSExpression(forKeyPath: op.rawValue)
        case .punctuation(.leftBrace):
            advance()
            var items: [NSExpression] = []
            if !match(.rightBrace) {
                repeat {
                    items.append(try parseExpression())
                } while match(.comma)
                try expect(.rightBrace, "missing '}' at the end of an aggregate")
            }
            return NSExpression(forAggregate: items)
        case .punctuation(.leftParen):
            guard parentheses < Self.maximumDepth else { throw failure(Self.tooDeep, kind: .tooComplex) }
            advance()
            parentheses += 1
            defer { parentheses -= 1 }
            let inner = try parseExpression(counted: false)
            try expect(.rightParen, "missing ')' after a parenthesised expression")
            return inner
        case .identifier(let name, let upper):
            let followedByParen = isPunctuation(.leftParen, self.token(at: 1))
            switch upper {
            case "NULL", "NIL":
                advance()
                return NSExpression(forConstantValue: nil)
            case "TRUE", "YES":
                advance()
                return NSExpression(forConstantValue: true)
            case "FALSE", "NO":
                advance()
                return NSExpression(forConstantValue: false)
            case "SELF":
                advance()
                return .expressionForEvaluatedObject()
            case "ANYKEY":
                advance()
                return .expressionForAnyKey()
            case "SUBQUERY" where followedByParen:
                return try parseSubquery()
            case "FUNCTION" where followedByParen:
                return try parseFunctionWithReceiver()
            case "CAST" where followedByParen:
                return try parseCast()
            case "TERNARY" where followedByParen:
                return try parseTernary()
            default:
                break
            }
            if Self.reservedWords.contains(upper) {
                throw failure("'\(name)' is a reserved word", expected: "an expression (write #\(name) to use it as a key)")
            }
            if followedByParen || isPunctuation(.colon, self.token(at: 1)) {
                return try parseFunctionCall()
            }
            advance()
            return NSExpression(forKeyPath: name)
        case .end:
            throw failure("the format ends where an expression is required", expected: "an expression")
        default:
            throw failure("expected an expression", expected: "an expression")
        }
    }

    mutating func parseArgumentList() throws -> [NSExpression] {
        try expect(.leftParen, "missing '(' before arguments")
        var items: [NSExpression] = []
        if match(.rightParen) { return items }
        repeat {
            items.append(try parseExpression())
        } while match(.comma)
        try expect(.rightParen, "missing ')' after arguments")
        return items
    }

    /// `name(args)`, `selector:(args)` or `part:part:(args)`.
    mutating func parseFunctionCall() throws -> NSExpression {
        let nameToken = current
        guard case .identifier(let name, _) = nameToken.kind else { throw failure("expected a function name") }
        advance()
        var selector = name
        while match(.colon) {
            selector += ":"
            if case .identifier(let part, _) = current.kind, isPunctuation(.colon, token(at: 1)) {
                selector += part
                advance()
            }
        }
        var arguments = try parseArgumentList()
        guard let function = BuiltinFunction.resolve(name: selector, argumentCount: arguments.count) else {
            throw failure("unknown function '\(selector)'", expected: "a function such as sum:, count:, add:to:, lowercase:, now",
                          at: nameToken, kind: .unknownFunction)
        }
        if function.isAggregate && arguments.count != 1 {
            arguments = [NSExpression(forAggregate: arguments)]
        } else if arguments.count != function.arity {
            throw failure("\(function.rawValue) takes \(function.arity) argument(s), not \(arguments.count)", at: nameToken)
        }
        return NSExpression(forFunction: function.rawValue, arguments: arguments)
    }

    /// `FUNCTION(receiver, 'selector', args…)`.
    mutating func parseFunctionWithReceiver() throws -> NSExpression {
        advance()
        try expect(.leftParen, "missing '(' after FUNCTION")
        let receiver = try parseExpression()
        try expect(.comma, "missing ',' after the receiver of FUNCTION")
        let selectorToken = current
        let selectorExpression = try parseExpression()
        guard case .constant(let value) = selectorExpression.node, case .string(let selector) = PredicateValue.classify(value) else {
            throw failure("the selector of FUNCTION must be a string", expected: "a quoted selector name", at: selectorToken)
        }
        var arguments: [NSExpression] = []
        while match(.comma) { arguments.append(try parseExpression()) }
        try expect(.rightParen, "missing ')' after FUNCTION arguments")
        return NSExpression(forFunction: receiver, selectorName: selector, arguments: arguments)
    }

    /// `CAST(value, 'Type')`; constant values are converted at parse time.
    mutating func parseCast() throws -> NSExpression {
        advance()
        try expect(.leftParen, "missing '(' after CAST")
        let value = try parseExpression()
        try expect(.comma, "missing ',' in CAST")
        let typeToken = current
        let typeExpression = try parseExpression()
        try expect(.rightParen, "missing ')' after CAST")
        guard case .constant(let typeValue) = typeExpression.node, case .string(let type) = PredicateValue.classify(typeValue) else {
            throw failure("the type of CAST must be a string", expected: "a quoted class name such as \"NSDate\"", at: typeToken)
        }
        if case .constant(let constant) = value.node, let converted = ExpressionFunctions.cast(constant, to: type) {
            return NSExpression(forConstantValue: converted)
        }
        return NSExpression(forFunction: "castObject:toType:", arguments: [value, NSExpression(forConstantValue: type)])
    }

    /// `TERNARY(predicate, trueExpression, falseExpression)`.
    mutating func parseTernary() throws -> NSExpression {
        advance()
        try expect(.leftParen, "missing '(' after TERNARY")
        let predicate = try parseOr()
        try expect(.comma, "missing ',' after the TERNARY condition")
        let whenTrue = try parseExpression()
        try expect(.comma, "missing ',' in TERNARY")
        let whenFalse = try parseExpression()
        try expect(.rightParen, "missing ')' after TERNARY")
        return NSExpression(forConditional: predicate, trueExpression: whenTrue, falseExpression: whenFalse)
    }

    /// `SUBQUERY(collection, $variable, predicate)`.
    mutating func parseSubquery() throws -> NSExpression {
        advance()
        try expect(.leftParen, "missing '(' after SUBQUERY")
        let collection = try parseExpression()
        try expect(.comma, "missing ',' after the SUBQUERY collection")
        guard case .variable(let variable) = current.kind else {
            throw failure("SUBQUERY needs an iterator variable", expected: "a variable such as $x")
        }
        advance()
        try expect(.comma, "missing ',' after the SUBQUERY variable")
        let predicate = try parseOr()
        try expect(.rightParen, "missing ')' after the SUBQUERY predicate")
        return NSExpression(forSubquery: collection, usingIteratorVariable: variable, predicate: predicate)
    }

    // MARK: - Arguments

    mutating func consumeArgument(_ spec: FormatSpecifier, token: Token) throws -> Any? {
        let index: Int
        if let explicit = spec.position {
            index = explicit - 1
        } else {
            index = nextArgument
            nextArgument += 1
        }
        guard index < arguments.count else {
            throw failure("\(spec.text) has no matching argument (\(arguments.count) supplied)",
                          expected: "at least \(index + 1) argument(s)", at: token, kind: .missingArgument)
        }
        return KeyPathWalker.normalize(arguments[index])
    }

    /// The key path string supplied for a `%K`.
    mutating func keyPathArgument(_ spec: FormatSpecifier, token: Token) throws -> String {
        let value = try consumeArgument(spec, token: token)
        guard case .string(let keyPath) = PredicateValue.classify(value), !keyPath.isEmpty else {
            throw failure("the argument for %K must be a key path string", expected: "a non-empty string argument",
                          at: token, kind: .invalidArgument)
        }
        return keyPath
    }

    mutating func argumentExpression(_ spec: FormatSpecifier, token: Token) throws -> NSExpression {
        if spec.conversion == "K" {
            let keyPath = try keyPathArgument(spec, token: token)
            if keyPath == "SELF" { return .expressionForEvaluatedObject() }
            return NSExpression(forKeyPath: keyPath)
        }
        let value = try consumeArgument(spec, token: token)
        switch spec.conversion {
        case "@":
            return NSExpression(forConstantValue: value)
        case "s", "S":
            guard case .string(let text) = PredicateValue.classify(value) else {
                throw failure("the argument for \(spec.text) must be a string", at: token, kind: .invalidArgument)
            }
            return NSExpression(forConstantValue: text)
        case "f", "F", "e", "E", "g", "G", "a", "A":
            guard case .number(let n) = PredicateValue.classify(value) else {
                throw failure("the argument for \(spec.text) must be a number", at: token, kind: .invalidArgument)
            }
            return NSExpression(forConstantValue: n.doubleValue)
        default:
            guard case .number(let n) = PredicateValue.classify(value) else {
                throw failure("the argument for \(spec.text) must be an integer", at: token, kind: .invalidArgument)
            }
            if let exact = n.exactInt64 { return NSExpression(forConstantValue: Int(exact)) }
            return NSExpression(forConstantValue: n.boxed)
        }
    }
}

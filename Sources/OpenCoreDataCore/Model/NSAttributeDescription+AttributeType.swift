import Foundation

extension NSAttributeDescription {
    /// The type of an attribute in the Swift spelling of iOS 15 and later (`.string`,
    /// `.integer64`, …): a wrapper of `NSAttributeType`, for `type` and
    /// `NSExpressionDescription.resultType`.
    public struct AttributeType: Hashable, Sendable {
        /// The attribute type it stands for.
        public let rawValue: NSAttributeType

        /// Wraps an `NSAttributeType`.
        public init(rawValue: NSAttributeType) { self.rawValue = rawValue }

        /// No type (transient attributes only).
        public static let undefined = AttributeType(rawValue: .undefinedAttributeType)
        /// A 16-bit signed integer.
        public static let integer16 = AttributeType(rawValue: .integer16AttributeType)
        /// A 32-bit signed integer.
        public static let integer32 = AttributeType(rawValue: .integer32AttributeType)
        /// A 64-bit signed integer.
        public static let integer64 = AttributeType(rawValue: .integer64AttributeType)
        /// A decimal number.
        public static let decimal = AttributeType(rawValue: .decimalAttributeType)
        /// A double-precision floating-point number.
        public static let double = AttributeType(rawValue: .doubleAttributeType)
        /// A single-precision floating-point number.
        public static let float = AttributeType(rawValue: .floatAttributeType)
        /// A string.
        public static let string = AttributeType(rawValue: .stringAttributeType)
        /// A Boolean.
        public static let boolean = AttributeType(rawValue: .booleanAttributeType)
        /// A date.
        public static let date = AttributeType(rawValue: .dateAttributeType)
        /// Binary data.
        public static let binaryData = AttributeType(rawValue: .binaryDataAttributeType)
        /// A UUID.
        public static let uuid = AttributeType(rawValue: .UUIDAttributeType)
        /// A URL.
        public static let uri = AttributeType(rawValue: .URIAttributeType)
        /// A value kept through a value transformer.
        public static let transformable = AttributeType(rawValue: .transformableAttributeType)
        /// A managed object ID.
        public static let objectID = AttributeType(rawValue: .objectIDAttributeType)
        /// A composite of other attributes.
        public static let composite = AttributeType(rawValue: .compositeAttributeType)
    }

    /// The attribute's type in the iOS 15 spelling; the same as `attributeType`.
    public var type: AttributeType {
        get { AttributeType(rawValue: attributeType) }
        set { attributeType = newValue.rawValue }
    }
}

extension NSExpressionDescription {
    /// The type of the expression's result in the iOS 15 spelling; the same as
    /// `expressionResultType`.
    public var resultType: NSAttributeDescription.AttributeType {
        get { NSAttributeDescription.AttributeType(rawValue: expressionResultType) }
        set { expressionResultType = newValue.rawValue }
    }
}

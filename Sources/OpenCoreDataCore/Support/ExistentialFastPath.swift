import Foundation

/// Cheap checks and reads of plain values held in `Any`, avoiding the runtime's general dynamic cast.
///
/// `type(of:)` on an existential reads its type metadata, so comparing it with a concrete type is a
/// pointer comparison. A value of a trivial type no larger than three words is stored inline at
/// the start of the existential's buffer, so once its type is known it can be loaded directly.
enum ExistentialFastPath {
    /// Whether a value's dynamic type is exactly `T` (no subclass, no bridging, no optional).
    @inline(__always)
    static func isExactly<T>(_ value: Any, _: T.Type) -> Bool {
        type(of: value) == T.self
    }

    /// The value as `T` when its dynamic type is exactly `T` and `T` is a trivial inline type.
    @inline(__always)
    static func load<T>(_ value: Any, as _: T.Type) -> T? {
        guard type(of: value) == T.self, _isPOD(T.self), MemoryLayout<T>.size <= 3 * MemoryLayout<Int>.size else { return nil }
        return withUnsafeBytes(of: value) { $0.load(as: T.self) }
    }

    /// The value as `T` when the optional holds exactly a `T` of a trivial inline type, read
    /// without unwrapping (and so copying) the existential: an `Any` is three words of buffer
    /// followed by its type metadata, which is null when the optional is nil.
    @inline(__always)
    static func load<T>(optional value: Any?, as _: T.Type) -> T? {
        guard _isPOD(T.self), MemoryLayout<T>.size <= 3 * MemoryLayout<Int>.size else { return nil }
        return withUnsafeBytes(of: value) { bytes in
            let metadata = bytes.load(fromByteOffset: 3 * MemoryLayout<Int>.size, as: UnsafeRawPointer?.self)
            guard metadata == unsafeBitCast(T.self as Any.Type, to: UnsafeRawPointer.self) else { return nil }
            return bytes.load(as: T.self)
        }
    }

    /// The string an `Any` holds when its dynamic type is exactly `String` (stored inline in the
    /// existential's buffer): a comparison of the type word and a copy, no runtime cast.
    @inline(__always)
    static func string(_ value: Any) -> String? {
        guard type(of: value) == String.self else { return nil }
        return withUnsafeBytes(of: value as Any) { $0.load(as: String.self) }
    }

    /// The class instance an `Any` holds when it was boxed with static type exactly `T` (an
    /// instance of `T` or of a subclass, put in the `Any` as a `T`): a comparison of the
    /// existential's type word and a load, with no call into the runtime.
    @inline(__always)
    static func instance<T: AnyObject>(_ value: Any, boxedAs _: T.Type) -> T? {
        // `as Any` keeps the existential closed (Swift 6 would otherwise open it into its content).
        let words = unsafeBitCast(value as Any, to: (UnsafeRawPointer?, UInt, UInt, UnsafeRawPointer?).self)
        guard words.3 == unsafeBitCast(T.self as Any.Type, to: UnsafeRawPointer.self), let object = words.0 else { return nil }
        return Unmanaged<T>.fromOpaque(object).takeUnretainedValue()
    }

    /// The address of the class instance an `Any?` holds directly, read without a dynamic cast;
    /// nil when it holds nothing or a value of any other kind (a struct, an enum, an optional, an
    /// `AnyHashable`, …), which the caller then casts the slow way.
    ///
    /// The existential's type metadata is class metadata when its kind word is 0 (a Swift class
    /// without Objective-C interop) or an isa pointer above the enumerated kinds (with it); the
    /// instance reference is then the buffer's first word.
    @inline(__always)
    static func classInstanceAddress(_ value: Any?) -> UnsafeRawPointer? {
        withUnsafeBytes(of: value) { bytes in
            guard let metadata = bytes.load(fromByteOffset: 3 * MemoryLayout<Int>.size, as: UnsafeRawPointer?.self) else { return nil }
            let kind = metadata.load(as: UInt.self)
            guard kind == 0 || kind > 0x7FF else { return nil }
            return bytes.load(as: UnsafeRawPointer?.self)
        }
    }
}

import Foundation

/// Connects entities to the Swift classes that represent them.
///
/// An entity's `representedClassName` (`Team`, `.Team`, `MyApp.Team`) is looked up in every loaded
/// image by `SwiftClassDirectory`, as Apple's Core Data asks the Objective-C runtime, so the class
/// is found whatever the program touched first. A name with a module that has no such class (a
/// model written for module `App`, used from `Tests`) falls back to the classes of that simple name.
/// Classes a program has used (`Team(context:)`, `NSFetchRequest<Team>`) are remembered and win a
/// tie between several modules' classes of one name. An entity whose class can't be found is
/// represented by `NSManagedObject`, with a warning, as Apple's Core Data does. Other classes that
/// model files name (migration policies, value transformers) are found the same way.
///
/// Metatypes are only ever cast here unwrapped: Swift 6.3's optimizer compiles a conditional cast
/// of a nil `Any.Type?` to a class metatype into a runtime call on a null pointer.
enum EntityClassRegistry {
    private struct State {
        var classesByName: [String: AnyClass] = [:]
        var modules: Set<String> = []
        var models: [WeakModel] = []
        var warnedNames: Set<String> = []
    }

    private struct WeakModel {
        weak var model: NSManagedObjectModel?
    }

    private static let state = LockedValue(State())

    /// Records a class so entities naming it can find it; returns its names (see `names(of:)`).
    @discardableResult
    static func register(_ type: NSManagedObject.Type) -> (qualified: String, simple: String) {
        guard type != NSManagedObject.self else { return names(of: type) }
        return registerClass(type)
    }

    /// Records any class under its qualified and simple names, and its module; returns the names.
    @discardableResult
    static func registerClass(_ type: AnyClass) -> (qualified: String, simple: String) {
        let (qualified, simple) = names(of: type)
        state.withLock { state in
            guard state.classesByName[qualified] == nil else { return }
            state.classesByName[qualified] = type
            if state.classesByName[simple] == nil { state.classesByName[simple] = type }
            if let module = qualified.split(separator: ".").first { state.modules.insert(String(module)) }
        }
        return (qualified, simple)
    }

    /// Records a model so `Team.entity()` can search it.
    static func register(_ model: NSManagedObjectModel) {
        state.withLock { state in
            state.models.removeAll { $0.model == nil }
            if !state.models.contains(where: { $0.model === model }) { state.models.append(WeakModel(model: model)) }
        }
    }

    /// The entity a class represents, searching the models in use.
    static func entity(for type: NSManagedObject.Type) -> NSEntityDescription? {
        register(type)
        let models = state.withLock { $0.models.compactMap(\.model) }
        for model in models.reversed() {
            if let entity = entity(for: type, in: model) { return entity }
        }
        return nil
    }

    /// The entity a class represents in one model.
    ///
    /// A frozen model remembers the answer per class: `Team(context:)` asks on every insert, and
    /// the names of a class cost more than the rest of an insert.
    static func entity(for type: NSManagedObject.Type, in model: NSManagedObjectModel) -> NSEntityDescription? {
        let frozen = model.isFrozen
        if frozen, let known = model.entitiesByClass.withLock({ $0[ObjectIdentifier(type)] }) { return known }
        let (qualified, simple) = register(type)
        let found = model.entities.first { entity in
            let name = entity.managedObjectClassName ?? ""
            return name == qualified || unqualified(name) == simple
        } ?? model.entitiesByName[simple]
        if frozen, let found { model.entitiesByClass.withLock { $0[ObjectIdentifier(type)] = found } }
        return found
    }

    /// The class to instantiate for an entity.
    static func resolveClass(for entity: NSEntityDescription) -> NSManagedObject.Type {
        let className = entity.managedObjectClassName ?? "NSManagedObject"
        if className == "NSManagedObject" || className.isEmpty { return NSManagedObject.self }
        guard let type = lookUp(className, as: NSManagedObject.Type.self) else {
            let firstTime = state.withLock { $0.warnedNames.insert(className).inserted }
            if firstTime {
                CoreDataLog.logger.warning("Unable to load class named '\(className)' for entity '\(entity.name ?? "?")'. Class not found, using default NSManagedObject instead.")
            }
            return NSManagedObject.self
        }
        register(type)
        return type
    }

    /// The class a name gives (`Team`, `.Team`, `Module.Team`, `Module.Outer.Team`) that is a `T`:
    /// a class the program has used of that name, else one found in the loaded images; a name whose
    /// module has no such class finds the classes of its simple name in any module.
    static func lookUp<T>(_ className: String, as type: T.Type) -> T? {
        let name = className.hasPrefix(".") ? String(className.dropFirst()) : className
        let simple = unqualified(name)
        let qualified = name.contains(".")
        let (known, modules): (AnyClass?, Set<String>) = state.withLock { state in
            (qualified ? state.classesByName[name] : state.classesByName[simple], state.modules)
        }
        if let known, let typed = known as? T { return typed }
        var candidates = SwiftClassDirectory.classes(named: name)
        if candidates.isEmpty, qualified { candidates = SwiftClassDirectory.classes(named: simple) }
        let typed = candidates.compactMap { candidate -> (module: String, type: T)? in
            guard let typed = candidate as? T else { return nil }
            return (String(_typeName(candidate, qualified: true).prefix { $0 != "." }), typed)
        }
        // Several modules' classes of one name: the one in a module whose classes the program used.
        return (typed.first { modules.contains($0.module) } ?? typed.min { $0.module < $1.module })?.type
    }

    /// A class's names as `String(reflecting:)` (qualified) and `String(describing:)` (simple) give
    /// them, read from its metadata directly: the `String` initializers first ask the runtime
    /// whether a metatype conforms to their printing protocols, and each such question the runtime
    /// has not answered before searches every conformance of every loaded image (a large share of
    /// opening a first store, once per class).
    private static func names(of type: AnyClass) -> (qualified: String, simple: String) {
        (_typeName(type, qualified: true), _typeName(type, qualified: false))
    }

    private static func unqualified(_ name: String) -> String {
        name.split(separator: ".").last.map(String.init) ?? name
    }
}

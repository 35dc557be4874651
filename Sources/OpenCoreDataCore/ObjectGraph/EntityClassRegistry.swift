import Foundation

/// Connects entities to the Swift classes that represent them.
///
/// Without the Objective-C runtime a class can't be found by its name alone unless its module is
/// known. A class is registered when it is used (`Team(context:)`, `Team.entity()`,
/// `NSFetchRequest<Team>`), and registration tells the registry the module of its neighbours, so
/// `representedClassName="Team"` resolves to `WorldCup.Team` by `_typeByName`. An entity whose class
/// can't be found is represented by `NSManagedObject`. Other classes that model files name (the
/// migration policies of a mapping model) are registered and found the same way.
enum EntityClassRegistry {
    private struct State {
        var classesByName: [String: Any.Type] = [:]
        var modules: [String] = []
        var models: [WeakModel] = []
    }

    private struct WeakModel {
        weak var model: NSManagedObjectModel?
    }

    private static let state = LockedValue(State())

    /// Records a class so entities naming it can find it.
    static func register(_ type: NSManagedObject.Type) {
        guard type != NSManagedObject.self else { return }
        registerClass(type)
    }

    /// Records any class under its qualified and simple names, and its module.
    static func registerClass(_ type: Any.Type) {
        let qualified = String(reflecting: type)
        let simple = String(describing: type)
        state.withLock { state in
            guard state.classesByName[qualified] == nil else { return }
            state.classesByName[qualified] = type
            state.classesByName[simple] = type
            if let module = qualified.split(separator: ".").first.map(String.init), !state.modules.contains(module) {
                state.modules.append(module)
            }
        }
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
    static func entity(for type: NSManagedObject.Type, in model: NSManagedObjectModel) -> NSEntityDescription? {
        register(type)
        let simple = String(describing: type)
        let qualified = String(reflecting: type)
        return model.entities.first { entity in
            let name = entity.managedObjectClassName ?? ""
            return name == qualified || unqualified(name) == simple
        } ?? model.entitiesByName[simple]
    }

    /// The class to instantiate for an entity.
    static func resolveClass(for entity: NSEntityDescription) -> NSManagedObject.Type {
        let className = entity.managedObjectClassName ?? "NSManagedObject"
        if className == "NSManagedObject" || className.isEmpty { return NSManagedObject.self }
        guard let type = lookUp(className, as: NSManagedObject.Type.self) else { return NSManagedObject.self }
        register(type)
        return type
    }

    /// The class a name gives: a registered class of that name, else the class as written or by
    /// its unqualified name in a module whose classes are registered (a model written for module
    /// `App` still finds `Tests.Team`).
    static func lookUp<T>(_ className: String, as type: T.Type) -> T? {
        let simple = unqualified(className)
        let (known, modules) = state.withLock { ($0.classesByName[className] ?? $0.classesByName[simple], $0.modules) }
        if let known = known as? T { return known }
        for candidate in [className] + modules.map({ "\($0).\(simple)" }) {
            if let found = _typeByName(candidate) as? T { return found }
        }
        return nil
    }

    private static func unqualified(_ name: String) -> String {
        name.split(separator: ".").last.map(String.init) ?? name
    }
}

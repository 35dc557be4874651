import Foundation

/// A recorder of undo and redo operations, with Foundation's `UndoManager` API (Foundation on Linux has none).
///
/// Operations are closures registered against a target. They are collected into groups; `undo()`
/// reverses the last top-level group, and the operations registered while undoing become the redo
/// group (and the other way round). Groups nest: a nested group is one step of its parent.
///
/// "Event" grouping: there is no run loop event on Linux. With `groupsByEvent` (the default) the
/// first registration outside any group opens a top-level group, and the group is closed at the end
/// of the event, which here is the next `NSManagedObjectContext.processPendingChanges()` of a context
/// using this manager, `undo()`, `redo()`, `beginUndoGrouping()` at top level, or an explicit `endEvent()`.
///
/// Not thread-safe: use it on one thread or queue (a context's queue), as Apple's.
open class UndoManager: @unchecked Sendable {
    /// One registered operation, or a nested group.
    private enum Step {
        case action(target: ObjectIdentifier, run: () -> Void)
        case group(UndoGroup)
    }

    /// A group of steps, run in reverse order of registration.
    private final class UndoGroup {
        var steps: [Step] = []
        var actionName = ""
        /// Whether the group was opened automatically for the current event.
        var isEventGroup = false

        var isEmpty: Bool { steps.isEmpty }

        /// Removes the actions of a target, and the nested groups that become empty.
        func removeActions(of target: ObjectIdentifier) {
            steps = steps.compactMap { step in
                switch step {
                case .action(let owner, _): return owner == target ? nil : step
                case .group(let group):
                    group.removeActions(of: target)
                    return group.isEmpty ? nil : step
                }
            }
        }

        func run() {
            for step in steps.reversed() {
                switch step {
                case .action(_, let run): run()
                case .group(let group): group.run()
                }
            }
        }
    }

    private var undoStack: [UndoGroup] = []
    private var redoStack: [UndoGroup] = []
    /// The open groups, outermost first.
    private var openGroups: [UndoGroup] = []
    private var disabledCount = 0
    private var isPostingCheckpoint = false

    /// Whether the first registration outside a group opens one, closed at the end of the event (default true).
    open var groupsByEvent = true
    /// The maximum number of top-level undo groups kept; 0 (the default) keeps all.
    open var levelsOfUndo: Int = 0 {
        didSet { trimToLevels() }
    }
    /// Whether the manager is running an undo.
    open private(set) var isUndoing = false
    /// Whether the manager is running a redo.
    open private(set) var isRedoing = false

    /// Creates an empty undo manager.
    public init() {}

    // MARK: Registering

    /// Records an operation that `undo()` (or `redo()`, when registered while undoing) runs with the target.
    ///
    /// A registration that is not part of an undo or redo clears the redo stack.
    /// Apple's Objective-C forms (`registerUndo(withTarget:selector:object:)`,
    /// `prepare(withInvocationTarget:)`) need the Objective-C runtime and are not provided.
    open func registerUndo<TargetType: AnyObject>(withTarget target: TargetType, handler: @escaping (TargetType) -> Void) {
        guard isUndoRegistrationEnabled else { return }
        let action = Step.action(target: ObjectIdentifier(target), run: { [target] in handler(target) })
        if let innermost = openGroups.last {
            innermost.steps.append(action)
        } else {
            // No open group: one for the event, or (where Apple raises) a group of its own.
            beginGroup(isEventGroup: groupsByEvent)
            openGroups[0].steps.append(action)
            if !groupsByEvent { closeGroup() }
        }
        if !isUndoing && !isRedoing { redoStack.removeAll() }
    }

    // MARK: Grouping

    /// Opens a group: the operations registered until the matching `endUndoGrouping()` undo together.
    open func beginUndoGrouping() {
        if isEventGroupOpen {
            // An explicit top-level group ends the event group that was collecting registrations.
            endEvent()
        }
        if !openGroups.isEmpty || (!isUndoing && !isRedoing) { postCheckpoint() }
        beginGroup(isEventGroup: false)
    }

    private func beginGroup(isEventGroup: Bool) {
        let group = UndoGroup()
        group.isEventGroup = isEventGroup
        openGroups.append(group)
        NotificationCenter.default.post(name: .NSUndoManagerDidOpenUndoGroup, object: self)
    }

    /// Closes the group opened by the matching `beginUndoGrouping()`; without one it does nothing
    /// (Apple raises an exception).
    open func endUndoGrouping() {
        // While undoing or redoing, the outermost group collects the reverse operations and is not the caller's to close.
        guard openGroups.count > (isUndoing || isRedoing ? 1 : 0) else {
            CoreDataLog.logger.warning("endUndoGrouping() was called with no open undo group; ignored.")
            return
        }
        postCheckpoint()
        // An observer of the checkpoint may have closed groups.
        guard !openGroups.isEmpty else { return }
        closeGroup()
    }

    private func closeGroup() {
        NotificationCenter.default.post(name: .NSUndoManagerWillCloseUndoGroup, object: self)
        let group = openGroups.removeLast()
        if !group.isEmpty {
            if let parent = openGroups.last {
                parent.steps.append(.group(group))
            } else {
                undoStack.append(group)
                trimToLevels()
            }
        }
        NotificationCenter.default.post(name: .NSUndoManagerDidCloseUndoGroup, object: self)
    }

    /// Ends the current event: closes the group `groupsByEvent` opened for it, if one is open.
    ///
    /// Stands in for the end of a run loop pass; contexts call it from `processPendingChanges()`.
    open func endEvent() {
        guard isEventGroupOpen else { return }
        postCheckpoint()
        // An observer of the checkpoint (a context ending its event) may have closed it already.
        guard isEventGroupOpen else { return }
        closeGroup()
    }

    private var isEventGroupOpen: Bool { openGroups.count == 1 && openGroups[0].isEventGroup }

    /// The number of open groups (0 when none is open).
    open var groupingLevel: Int { openGroups.count }

    // MARK: Undo and redo

    /// Whether there is something to undo.
    open var canUndo: Bool { !undoStack.isEmpty || openGroups.contains { !$0.isEmpty } }

    /// Whether there is something to redo.
    open var canRedo: Bool {
        postCheckpoint()
        return !redoStack.isEmpty
    }

    /// Closes the event group if it is open, then reverses the last top-level group.
    ///
    /// With an explicit group still open it does nothing (Apple raises an exception).
    open func undo() {
        postCheckpoint()
        endEvent()
        guard openGroups.isEmpty else {
            CoreDataLog.logger.warning("undo() was called with an undo group still open; close it with endUndoGrouping() first.")
            return
        }
        guard let group = undoStack.popLast() else { return }
        run(group, undoing: true)
    }

    /// Reverses the last undo.
    open func redo() {
        postCheckpoint()
        endEvent()
        guard openGroups.isEmpty, let group = redoStack.popLast() else { return }
        run(group, undoing: false)
    }

    /// Runs a group's operations, collecting what they register into the opposite stack under the same name.
    private func run(_ group: UndoGroup, undoing: Bool) {
        NotificationCenter.default.post(name: undoing ? .NSUndoManagerWillUndoChange : .NSUndoManagerWillRedoChange, object: self)
        if undoing { isUndoing = true } else { isRedoing = true }
        beginGroup(isEventGroup: false)
        openGroups[0].actionName = group.actionName
        group.run()
        let reverse = openGroups[0]
        openGroups.removeAll()  // The handlers' own groups, had they left any open, end with the undo.
        if !reverse.isEmpty {
            if undoing {
                redoStack.append(reverse)
            } else {
                undoStack.append(reverse)
                trimToLevels()
            }
        }
        if undoing { isUndoing = false } else { isRedoing = false }
        NotificationCenter.default.post(name: undoing ? .NSUndoManagerDidUndoChange : .NSUndoManagerDidRedoChange, object: self)
    }

    // MARK: Removing

    /// Empties the undo and redo stacks.
    open func removeAllActions() {
        undoStack.removeAll()
        redoStack.removeAll()
        openGroups.removeAll()
    }

    /// Removes every operation registered with a target from both stacks.
    open func removeAllActions(withTarget target: AnyObject) {
        let identifier = ObjectIdentifier(target)
        for group in undoStack + redoStack + openGroups { group.removeActions(of: identifier) }
        undoStack.removeAll { $0.isEmpty }
        redoStack.removeAll { $0.isEmpty }
    }

    private func trimToLevels() {
        guard levelsOfUndo > 0, undoStack.count > levelsOfUndo else { return }
        undoStack.removeFirst(undoStack.count - levelsOfUndo)
    }

    // MARK: Registration switch

    /// Stops recording operations until the matching `enableUndoRegistration()`; calls nest.
    open func disableUndoRegistration() { disabledCount += 1 }

    /// Balances a `disableUndoRegistration()`.
    open func enableUndoRegistration() {
        guard disabledCount > 0 else {
            CoreDataLog.logger.warning("enableUndoRegistration() was called without a matching disableUndoRegistration(); ignored.")
            return
        }
        disabledCount -= 1
    }

    /// Whether operations are being recorded.
    open var isUndoRegistrationEnabled: Bool { disabledCount == 0 }

    // MARK: Action names

    /// Names the current undo group (the open one, else the last closed one), as in "Undo Typing".
    open func setActionName(_ actionName: String) {
        if isUndoing || isRedoing, let group = openGroups.first {
            group.actionName = actionName
        } else if let group = openGroups.first ?? undoStack.last {
            group.actionName = actionName
        }
    }

    /// The name of the group `undo()` would reverse, or "".
    open var undoActionName: String { (openGroups.first(where: { !$0.isEmpty }) ?? undoStack.last)?.actionName ?? "" }
    /// The name of the group `redo()` would repeat, or "".
    open var redoActionName: String { redoStack.last?.actionName ?? "" }
    /// A menu title for undo: "Undo" followed by the action name, if any.
    open var undoMenuItemTitle: String { undoMenuTitle(forUndoActionName: undoActionName) }
    /// A menu title for redo: "Redo" followed by the action name, if any.
    open var redoMenuItemTitle: String { redoMenuTitle(forUndoActionName: redoActionName) }
    /// "Undo" followed by an action name.
    open func undoMenuTitle(forUndoActionName actionName: String) -> String { actionName.isEmpty ? "Undo" : "Undo \(actionName)" }
    /// "Redo" followed by an action name.
    open func redoMenuTitle(forUndoActionName actionName: String) -> String { actionName.isEmpty ? "Redo" : "Redo \(actionName)" }

    /// Posts `NSUndoManagerCheckpoint`, not again from inside an observer of the same checkpoint.
    private func postCheckpoint() {
        guard !isPostingCheckpoint else { return }
        isPostingCheckpoint = true
        defer { isPostingCheckpoint = false }
        NotificationCenter.default.post(name: .NSUndoManagerCheckpoint, object: self)
    }
}

extension Notification.Name {
    /// Posted when an undo manager opens or closes a group and before undo and redo; contexts record their pending changes on it.
    public static let NSUndoManagerCheckpoint = Notification.Name("NSUndoManagerCheckpointNotification")
    /// Posted before an undo manager undoes.
    public static let NSUndoManagerWillUndoChange = Notification.Name("NSUndoManagerWillUndoChangeNotification")
    /// Posted after an undo manager undid.
    public static let NSUndoManagerDidUndoChange = Notification.Name("NSUndoManagerDidUndoChangeNotification")
    /// Posted before an undo manager redoes.
    public static let NSUndoManagerWillRedoChange = Notification.Name("NSUndoManagerWillRedoChangeNotification")
    /// Posted after an undo manager redid.
    public static let NSUndoManagerDidRedoChange = Notification.Name("NSUndoManagerDidRedoChangeNotification")
    /// Posted when an undo manager opened a group.
    public static let NSUndoManagerDidOpenUndoGroup = Notification.Name("NSUndoManagerDidOpenUndoGroupNotification")
    /// Posted before an undo manager closes a group.
    public static let NSUndoManagerWillCloseUndoGroup = Notification.Name("NSUndoManagerWillCloseUndoGroupNotification")
    /// Posted after an undo manager closed a group.
    public static let NSUndoManagerDidCloseUndoGroup = Notification.Name("NSUndoManagerDidCloseUndoGroupNotification")
}

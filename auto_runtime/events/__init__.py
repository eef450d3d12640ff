"""CloudEvents as the runtime reads them: attribute rules, reserved names, times. Shared by publishing and by
workflows that emit and listen."""

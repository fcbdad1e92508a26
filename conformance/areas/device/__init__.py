"""The device area's helpers: the AcceleratorManager contract probe and its judges, host detection, Ray's built-in managers;
the checks' context (context.DeviceCtx) and its one fixture, `device_ctx` (fixtures)."""

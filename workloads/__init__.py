"""workloads layer of fabric-emu."""

__fabric_emu__ = True
__all__: list[str] = []

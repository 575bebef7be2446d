"""The errors the runtime raises. All are ``RuntimeError`` subclasses, as SGLang raises
``RuntimeError``."""

from typing import Any

from ._lazy_exports import old_attribute


class PluginError(RuntimeError):
    """A plugin could not be used; the message names the plugin and its distribution and says how to
    fix it."""

    def __init__(
        self, message: str, *, plugin: str | None = None, distribution: str | None = None
    ) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution
        #: The outcomes of plugin code (``PluginOutcome`` records) that led to the error, for
        #: diagnostics: a failed plugin's, and for a selection error every ``activate()`` outcome so
        #: far.
        self.outcomes: tuple[Any, ...] = ()


# old attribute names, deprecated
PluginError.__getattr__ = old_attribute  # type: ignore[attr-defined]


class PlatformNotFoundError(PluginError, ValueError):
    """``SGLANG_PLATFORM`` names a platform plugin that is not installed.

    Also a ``ValueError``, which is what SGLang's diffusion engine raises for an unknown
    ``SGLANG_DIFFUSION_PLATFORM_OVERRIDE``.
    """


class PlatformUnavailableError(PluginError):
    """The selected platform plugin's ``activate()`` returned ``None``: its hardware is not here."""


class AmbiguousPlatformError(PluginError):
    """Several platform plugins activated and none was chosen with ``SGLANG_PLATFORM``."""


class DuplicatePluginError(PluginError):
    """Two distributions offer an entry point with the same name in the same group."""


class PluginLoadError(PluginError):
    """A plugin's module failed to import, or its function raised."""


class InvalidPlatformError(PluginError, TypeError):
    """``activate()`` returned something that is not a usable platform class.

    Also a ``TypeError``, which is what SGLang raises for a class that is not a platform subclass.
    """


class ReentrantSelectionError(PluginError):
    """A platform plugin read ``current_platform`` while that platform was being selected.

    Selection cannot depend on its own result: the plugin's import or ``activate()`` (or the
    platform class's constructor) must probe the hardware directly instead.
    """


class ReentrantLoadError(PluginError):
    """A plugin's code waited for a thread that called ``load_plugins()`` while that load ran the
    plugin: waiting would never end, so the thread gets this error and the plugin fails."""


class PluginConsistencyError(RuntimeError):
    """The ranks of a ``torch.distributed`` job do not run the same plugins; raised on every rank
    alike.

    The message names the ranks and hosts that differ and each item that differs. ``differences``
    holds them as data (``Difference`` records, errors first), ``groups`` the ranks grouped by
    identical fingerprint.
    """

    def __init__(
        self,
        message: str,
        *,
        differences: tuple[Any, ...] = (),
        groups: tuple[Any, ...] = (),
        namespace: str = "srt",
    ) -> None:
        super().__init__(message)
        self.differences = differences
        self.groups = groups
        self.namespace = namespace

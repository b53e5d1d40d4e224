"""The tenant boundary: what tenant files may write and use, held key by key and on every
rendered object."""

"""The upload format: what an agent's zip may hold and what it declares, read without building anything.

Pure library (standard library, ``packaging``, PyYAML): ``zip_directory`` (the central directory streamed
under caps), ``zip_validation`` (``validate_zip``: every check, the content hash), ``languages`` (entry
files), ``python_check`` (Python syntax, compiled never run), ``requirements`` and ``conda_env`` (the
package files), ``local_support`` (what the local sandbox can honour). ``core`` applies it at upload,
``builder`` before building, ``publisher`` before publishing. See ``README.md``.
"""

# Import rules of the default pack. Each `# case:` is checked as its own program.

# case: future imports come first and are allowed
from __future__ import annotations  # ok: SX201

# case: stdlib computation modules are allowed
import math  # ok: SX201, SX202
import json, re, collections  # ok: SX201
from itertools import chain, groupby  # ok: SX201
from collections.abc import Mapping  # ok: SX201
import statistics as st  # ok: SX201
from dataclasses import dataclass, field  # ok: SX201

# case: plain process and network modules
import subprocess  # expect: SX201, SX202
import socket  # expect: SX201, SX202
import urllib.request  # expect: SX201, SX202
import ctypes.util  # expect: SX201, SX202

# case: aliases and from-imports are still the same modules
import subprocess as o  # expect: SX201, SX202
from socket import socket as p  # expect: SX201, SX202
from importlib import import_module  # expect: SX201, SX202
import scipy as sp  # expect: SX201
# ok: SX202

# case: native mode runs the workdir, thread and data modules behind the kernel layers
import os, sys, shutil, glob, tempfile, threading, asyncio, sqlite3  # ok: SX201, SX202
from os import path as p  # ok: SX201, SX202
import numpy as np, pandas as pd  # ok: SX201
import zipfile, gzip, tarfile  # ok: SX201

# case: restricted mode has no view of the native-only modules
# mode: restricted
import scipy  # expect: SX201, SX205
import json, math  # ok: SX201, SX205

# case: restricted mode runs the data stack's views (inside the confined worker)
# mode: restricted
import numpy as np, pandas as pd, matplotlib.pyplot as plt  # ok: SX201, SX205

# case: restricted mode runs the views it builds of the file and environment modules
# mode: restricted
import os, os.path, pathlib, glob, shutil, tempfile, sys, traceback  # ok: SX201, SX205
from pathlib import Path  # ok: SX201, SX205

# case: restricted mode runs its views of sqlite3 and the archive modules (files through the workdir)
# mode: restricted
import sqlite3, gzip, bz2, lzma, zipfile, tarfile, zlib  # ok: SX201, SX205

# case: restricted mode runs its views of threads that belong to their cell
# mode: restricted
import threading, queue, warnings, logging, asyncio  # ok: SX201, SX205
import logging.handlers  # expect: SX201, SX205
from concurrent.futures import ThreadPoolExecutor  # ok: SX201, SX205
from concurrent.futures import ProcessPoolExecutor  # ok: SX201
import concurrent.futures.process  # expect: SX201, SX202
import multiprocessing  # expect: SX201, SX202

# case: relative imports are never covered by the allowlist
from . import secrets_module  # expect: SX201
from .. import parent  # expect: SX201

# case: star import of a denied module
from subprocess import *  # expect: SX201, SX202

# case: import by string literal is checked like an import statement
m = __import__("pty")  # expect: SX201, SX202, SX301
q = __import__("json")  # expect: SX301
# ok: SX201

# case: string-built import names are folded and checked
m = __import__("p" + "ty")  # expect: SX201, SX202, SX301
n = __import__("".join(["sub", "process"]))  # expect: SX201, SX202, SX301
k = __import__("ptx"[::-1] .replace("x", "y"))  # expect: SX201, SX301

# case: a name bound once to a string folds too
name = "sock" + "et"
mod = __import__(name)  # expect: SX201, SX202, SX301

# case: import names that cannot be folded are dynamic imports
import json  # ok: SX204
config = json.loads('{"m": "os"}')
mod = __import__(config["m"])  # expect: SX204, SX301
again = __import__(config["m"].strip())  # expect: SX204, SX301

# case: importlib by alias
import importlib as il  # expect: SX201, SX202
il.import_module("p" + "ty")  # expect: SX201, SX202

# case: a rebinding defeats folding, so the import is dynamic
name = "json"
name += "x"
mod = __import__(name)  # expect: SX204, SX301

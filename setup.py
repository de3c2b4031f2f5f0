"""Ship the top-level ``policies/`` directory inside the wheel as ``safeexec.policies``."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["safeexec", "safeexec.*"]), "safeexec.policies"],
    package_dir={"safeexec.policies": "policies"},
    package_data={
        "safeexec": ["py.typed"],
        "safeexec.dsl": ["grammar.lark"],
        "safeexec.service": ["openapi.json"],
        "safeexec.sandbox": ["egress_site/sitecustomize.py"],
        "safeexec.restricted": ["module_views.json"],
        "safeexec.policies": ["**/*.toml", "**/*.py", "**/*.md"],
    },
)

# The viewer app (viewer/: TypeScript, built by Vite) in the Python package. `npm run build`
# writes it into python/motes/server/app/ (gitignored), where wheel.packages and
# sdist.include of pyproject.toml pick it up: once, in the wheel and in the sdist.
#
# Included at configure time when MOTES_BUILD_PYTHON is on: by every `pip install .` and,
# with sdist.cmake, by every sdist build (`python -m build --sdist`), so that the sdist
# carries the built app and installing it needs no Node. The rule:
#   - the app is up to date (index.html no older than every file of viewer/ but
#     node_modules/, dev/, test/ and README.md), or we are in an unpacked sdist (PKG-INFO at
#     the top, which carries the app): it is used as it is;
#   - otherwise Node.js >= 18 and npm on PATH (or MOTES_NODE) build it: `npm ci` (when
#     viewer/node_modules is missing or older than package-lock.json) and `npm run build`;
#   - no Node and no app: the configuration fails, saying what to install; no Node and an
#     older app: a warning, and the older app is shipped.
# -DMOTES_VIEWER=OFF (pip: -Ccmake.define.MOTES_VIEWER=OFF) builds nothing: the package then
# carries whatever app is there, none in a clean clone, and `motes serve` answers / with a
# page saying that the app is not built (its HTTP API works all the same).

option(MOTES_VIEWER "Build the viewer app into the Python package when it is missing or older than viewer/ (needs Node.js >= 18 and npm)" ON)
set(MOTES_NODE "" CACHE FILEPATH "Node.js (>= 18) that builds the viewer app; empty: the first node on PATH")

set(MOTES_VIEWER_SOURCE "${CMAKE_CURRENT_SOURCE_DIR}/viewer")
set(MOTES_VIEWER_APP "${CMAKE_CURRENT_SOURCE_DIR}/python/motes/server/app")

# The first file of viewer/ (outside node_modules/, dev/, test/, README.md) newer than
# `index`, or "" when there is none.
function(motes_viewer_newer_source index out)
  file(GLOB entries LIST_DIRECTORIES true RELATIVE "${MOTES_VIEWER_SOURCE}" "${MOTES_VIEWER_SOURCE}/*")
  list(REMOVE_ITEM entries node_modules dev test README.md)
  foreach(entry IN LISTS entries)
    set(path "${MOTES_VIEWER_SOURCE}/${entry}")
    if(IS_DIRECTORY "${path}")
      file(GLOB_RECURSE files "${path}/*")
    else()
      set(files "${path}")
    endif()
    foreach(file IN LISTS files)
      # IS_NEWER_THAN is also true for equal times (an sdist's files all have one time).
      if(NOT "${index}" IS_NEWER_THAN "${file}")
        set(${out} "${file}" PARENT_SCOPE)
        return()
      endif()
    endforeach()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# Node.js >= 18 and its npm: sets node, npm (empty when absent) and node_found (what was
# found, for messages). Searched at every configuration, on PATH only, so that a Node
# removed since (or hidden from PATH) is not remembered.
function(motes_viewer_find_node)
  set(node "")
  set(npm "")
  if(MOTES_NODE)
    set(candidate "${MOTES_NODE}")
  else()
    find_program(_motes_node NAMES node nodejs NO_DEFAULT_PATH PATHS ENV PATH)
    set(candidate "${_motes_node}")
    unset(_motes_node CACHE)
  endif()
  set(found "no node on PATH")
  if(candidate)
    execute_process(COMMAND "${candidate}" --version OUTPUT_VARIABLE version RESULT_VARIABLE rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET TIMEOUT 30)
    if(rc EQUAL 0 AND version MATCHES "^v([0-9]+)\\.")
      set(found "Node ${version} at ${candidate}")
      if(CMAKE_MATCH_1 GREATER_EQUAL 18)
        get_filename_component(bin "${candidate}" DIRECTORY)
        find_program(_motes_npm npm NO_DEFAULT_PATH PATHS "${bin}" ENV PATH)
        if(_motes_npm)
          set(node "${candidate}")
          set(npm "${_motes_npm}")
        else()
          set(found "${found}, but no npm")
        endif()
        unset(_motes_npm CACHE)
      endif()
    else()
      set(found "${candidate}, which does not run as Node (node --version failed)")
    endif()
  endif()
  set(node "${node}" PARENT_SCOPE)
  set(npm "${npm}" PARENT_SCOPE)
  set(node_found "${found}" PARENT_SCOPE)
endfunction()

function(motes_viewer_run what)
  # npm's scripts start `node` from PATH: the Node found first.
  get_filename_component(bin "${node}" DIRECTORY)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "PATH=${bin}:$ENV{PATH}" "${npm}" ${ARGN}
                  WORKING_DIRECTORY "${MOTES_VIEWER_SOURCE}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "motes: `npm ${ARGN}` in viewer/ failed (${rc}) while building the viewer app (${what}); "
                        "its output is above. -DMOTES_VIEWER=OFF builds the package without the app.")
  endif()
endfunction()

function(motes_viewer_build)
  set(index "${MOTES_VIEWER_APP}/index.html")
  if(NOT MOTES_VIEWER)
    if(EXISTS "${index}")
      message(STATUS "motes: MOTES_VIEWER=OFF: the viewer app in python/motes/server/app is shipped as it is")
    else()
      message(STATUS "motes: MOTES_VIEWER=OFF: no viewer app; `motes serve` will say at / that it is not built")
    endif()
    return()
  endif()
  set(newer "")
  if(EXISTS "${index}")
    if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/PKG-INFO")
      message(STATUS "motes: the viewer app as the sdist carries it")
      return()
    endif()
    motes_viewer_newer_source("${index}" newer)
    if(newer STREQUAL "")
      message(STATUS "motes: the viewer app is up to date (python/motes/server/app)")
      return()
    endif()
  endif()

  motes_viewer_find_node()
  if(NOT node)
    if(newer)
      message(WARNING "motes: the viewer app in python/motes/server/app is older than ${newer}, and "
                      "rebuilding it needs Node.js >= 18 and npm on PATH (found: ${node_found}): "
                      "the package gets the older app.")
      return()
    endif()
    message(FATAL_ERROR
      "motes: the viewer app (python/motes/server/app/index.html) is not built, and building it "
      "needs Node.js >= 18 and npm on PATH (found: ${node_found}).\n"
      "Either install them (Debian 12: apt-get install nodejs npm) and build again; "
      "or install motes from its sdist (motes-${PROJECT_VERSION}.tar.gz), which carries the built app "
      "and needs no Node; or build without the app: pip install . -Ccmake.define.MOTES_VIEWER=OFF "
      "(or cmake -DMOTES_VIEWER=OFF), and `motes serve` will answer / with a page saying that the app "
      "is not built (its HTTP API works without it).")
  endif()

  if(newer)
    set(why "older than ${newer}")
  else()
    set(why "not built")
  endif()
  message(STATUS "motes: building the viewer app (${why}) with ${node_found}")
  set(installed "${MOTES_VIEWER_SOURCE}/node_modules/.package-lock.json")
  if(NOT EXISTS "${installed}" OR NOT "${installed}" IS_NEWER_THAN "${MOTES_VIEWER_SOURCE}/package-lock.json")
    motes_viewer_run("${why}" ci --no-audit --no-fund --loglevel=error)
  endif()
  motes_viewer_run("${why}" run build --silent)
  if(NOT EXISTS "${index}")
    message(FATAL_ERROR "motes: `npm run build` in viewer/ wrote no ${index}")
  endif()
endfunction()

motes_viewer_build()

-- links.lua: the pandoc filter that turns the repository's Markdown links
-- into the book's (tools/book/build.sh runs it on every page).
--
-- The book mirrors the repository's layout, so a relative link keeps its
-- path and only changes its kind of target:
--   a page of the book (X.md)       -> X.html (README.md -> index.html)
--   a picture                       -> the same path (build.sh copies it)
--   any other tracked file          -> src/<path>.html, the file with numbered lines
--   a directory                     -> src/<path>/index.html, its file list
-- Inline code that names a tracked file (`nn/config.h`) becomes a link to
-- it, and a code block that quotes a source file gets a line under it
-- naming the file and the line where the quote starts.
--
-- Environment (set by build.sh):
--   BOOK_DOC    this page's path in the repository (tutorials/02-autograd.md)
--   BOOK_FILES  a file listing every tracked file, one path per line
--   BOOK_PAGES  a file listing the Markdown files that are book pages
--   BOOK_NEEDS  a file to which the filter appends what the page links to
--               ("src PATH" or "copy PATH"), for build.sh to make

local doc = os.getenv("BOOK_DOC")
local doc_dir = doc:match("^(.*)/[^/]*$") or ""

local function read_set(path)
    local set = {}
    for line in io.lines(path) do set[line] = true end
    return set
end
local tracked = read_set(os.getenv("BOOK_FILES"))
local pages = read_set(os.getenv("BOOK_PAGES"))
local needs = io.open(os.getenv("BOOK_NEEDS"), "a")

-- Is `dir` a directory of tracked files?
local tracked_dirs = {}
for path in pairs(tracked) do
    local d = path:match("^(.*)/[^/]*$")
    while d do
        tracked_dirs[d] = true
        d = d:match("^(.*)/[^/]*$")
    end
end

-- a/b/../c/./d -> a/c/d; nil if it climbs out of the repository.
local function normalize(path)
    local parts = {}
    for part in path:gmatch("[^/]+") do
        if part == ".." then
            if #parts == 0 then return nil end
            table.remove(parts)
        elseif part ~= "." then
            table.insert(parts, part)
        end
    end
    return table.concat(parts, "/")
end

-- The relative path from this page's directory to `target` (both repository paths).
local function relative(target)
    local up = ""
    if doc_dir ~= "" then up = string.rep("../", select(2, doc_dir:gsub("/", "")) + 1) end
    return up .. target
end

local picture = {png = true, jpg = true, jpeg = true, svg = true, gif = true}

-- The book's address for a repository path, or nil if the path is not ours.
local function book_target(repo_path)
    if pages[repo_path] then
        if repo_path == "README.md" then return "index.html" end
        return (repo_path:gsub("%.md$", ".html"))
    end
    if tracked[repo_path] then
        local ext = repo_path:match("%.([%w]+)$")
        if ext and picture[ext:lower()] then
            needs:write("copy ", repo_path, "\n")
            return repo_path
        end
        needs:write("src ", repo_path, "\n")
        return "src/" .. repo_path .. ".html"
    end
    if tracked_dirs[repo_path] then
        needs:write("dir ", repo_path, "\n")
        return "src/" .. repo_path .. "/index.html"
    end
    return nil
end

function Link(el)
    local target = el.target
    if target:match("^%a[%w+.-]*:") or target:match("^#") then return nil end  -- a URL or an anchor here
    local path, anchor = target:match("^([^#]*)(#?.*)$")
    local repo_path = normalize((doc_dir ~= "" and doc_dir .. "/" or "") .. path:gsub("/$", ""))
    if not repo_path then return nil end
    local book = book_target(repo_path)
    if not book then
        io.stderr:write(doc, ": link to ", target, " names no file of the repository\n")
        return nil
    end
    el.target = relative(book) .. anchor
    return el
end

function Image(el)
    local target = el.src
    if target:match("^%a[%w+.-]*:") then return nil end
    local repo_path = normalize((doc_dir ~= "" and doc_dir .. "/" or "") .. target)
    if repo_path and tracked[repo_path] then
        needs:write("copy ", repo_path, "\n")
        el.src = relative(repo_path)
    else
        io.stderr:write(doc, ": picture ", target, " names no file of the repository\n")
    end
    return el
end

-- `tensor/ops/dyt.cpp` (or with :LINE) in running text -> a link to the file.
function Code(el)
    local path, line = el.text:match("^([%w_./-]+%.[%w]+):?(%d*)$")
    if not path then path = el.text:match("^([%w_./-]+/)$") end
    if not path then return nil end
    local repo_path = normalize(path:gsub("/$", ""))
    if not repo_path or not (tracked[repo_path] or tracked_dirs[repo_path]) then return nil end
    if pages[repo_path] then return nil end  -- pages are linked by their Markdown links
    local book = book_target(repo_path)
    if not book then return nil end
    local anchor = (line ~= "" and not tracked_dirs[repo_path]) and ("#L" .. line) or ""
    return pandoc.Link(el, relative(book) .. anchor)
end

-- Code blocks: find the source file that holds the block's longest line.
local sources = nil  -- path -> array of stripped lines, read once
local source_ext = {h = true, cpp = true, cu = true, cuh = true, sh = true, py = true, gp = true, mk = true}
local function load_sources()
    sources = {}
    for path in pairs(tracked) do
        local ext = path:match("%.([%w]+)$")
        if (ext and source_ext[ext]) or path == "Makefile" then
            local lines = {}
            local f = io.open(path)
            if f then
                for l in f:lines() do table.insert(lines, (l:gsub("^%s+", ""):gsub("%s+$", ""))) end
                f:close()
                sources[path] = lines
            end
        end
    end
end

local function strip(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

function CodeBlock(el)
    -- Only code: a block that quotes a program's output or a command has no source line.
    local longest = ""
    for l in el.text:gmatch("[^\n]+") do
        l = strip(l)
        if #l > #longest and not l:match("^//") and not l:match("^#") then longest = l end
    end
    if #longest < 24 then return nil end
    if not sources then load_sources() end
    local found = {}
    for path, lines in pairs(sources) do
        for i, l in ipairs(lines) do
            if l == longest then table.insert(found, {path = path, line = i}) break end
        end
    end
    if #found ~= 1 then return nil end  -- nowhere, or in several files: no single source to name
    -- The block's first line, found near the longest, is where the quote starts.
    local first = strip(el.text:match("^[^\n]*"))
    local start = found[1].line
    local lines = sources[found[1].path]
    for i = found[1].line, math.max(1, found[1].line - 80), -1 do
        if lines[i] == first then start = i break end
    end
    needs:write("src ", found[1].path, "\n")
    local link = pandoc.Link(found[1].path .. ":" .. start, relative("src/" .. found[1].path .. ".html") .. "#L" .. start)
    return {el, pandoc.Div(pandoc.Para({pandoc.Str("source:"), pandoc.Space(), link}), {class = "source"})}
end

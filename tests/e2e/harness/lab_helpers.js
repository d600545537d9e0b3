// Injected into every e2e page (Playwright init script). Exact app-state checks and actions through
// `window.jupyterapp` (exposed by `--LabApp.expose_app_in_browser=True`), the way JupyterLab's own UI tests work.
// Every function takes the notebook path relative to the server root.
window.__trtE2E = {
  // execution count of each code cell just before we asked to run it: "executed" means a new, different count
  before: {},

  panel(path) {
    const app = window.jupyterapp;
    if (!app || !app.shell) return null;
    for (const w of app.shell.widgets('main')) {
      if (w && w.context && w.context.path === path && w.sessionContext && w.content) return w;
    }
    return null;
  },

  kernel(path) {
    const p = this.panel(path);
    return p && p.sessionContext.session ? p.sessionContext.session.kernel : null;
  },

  // document loaded, cells attached, splash gone; with `withKernel`, kernel connected (and idle unless `idle`
  // is false), without it, the session settled with no kernel
  ready(path, idle, withKernel = true) {
    const p = this.panel(path);
    if (!p || !p.context.isReady || document.getElementById('jupyterlab-splash')) return false;
    if (p.content.widgets.length === 0 || !p.content.node.querySelector('.jp-Cell')) return false;
    if (!withKernel) return p.sessionContext.isReady && !this.kernel(path);
    const k = this.kernel(path);
    if (!k || k.connectionStatus !== 'connected') return false;
    return idle ? k.status === 'idle' : true;
  },

  // the app's plugins are up: documents can be opened
  appReady() {
    const app = window.jupyterapp;
    return Boolean(app && app.docRegistry.getWidgetFactory('Notebook') && app.commands.hasCommand('docmanager:open')
      && !document.getElementById('jupyterlab-splash'));
  },

  // Open a notebook the way "No Kernel" leaves it: its session context is told not to start a kernel before it
  // initializes (the factory announces the new panel before the document's context is initialized).
  openWithoutKernel(path) {
    const app = window.jupyterapp, factory = app.docRegistry.getWidgetFactory('Notebook');
    const noKernel = (_, widget) => {
      if (widget.context.path !== path) return;
      factory.widgetCreated.disconnect(noKernel);
      const s = widget.context.sessionContext;
      s.kernelPreference = { ...s.kernelPreference, shouldStart: false };
    };
    factory.widgetCreated.connect(noKernel);
    void app.commands.execute('docmanager:open', { path, factory: 'Notebook' });
    return true;
  },

  // Kernel -> Restart / Shut Down, as the menu does it (without its confirmation dialog)
  restartKernel(path) {
    const k = this.kernel(path);
    if (!k) throw new Error(`no kernel for ${path}`);
    void k.restart();
    return true;
  },

  shutdownKernel(path) {
    const p = this.panel(path);
    if (!p) throw new Error(`no notebook ${path}`);
    void p.sessionContext.shutdown();
    return true;
  },

  kernelStatus(path) {
    const k = this.kernel(path);
    return k ? `${k.connectionStatus}/${k.status}` : 'none';
  },

  cellCount(path) {
    const p = this.panel(path);
    return p ? p.content.widgets.length : 0;
  },

  _remember(path, cells) {
    const before = (this.before[path] = this.before[path] || {});
    for (const [i, c] of cells) {
      if (c.model.type === 'code') before[i] = c.model.executionCount;
    }
  },

  // Fire and forget: the command is issued and this returns while the cell runs.
  runCell(path, index) {
    const app = window.jupyterapp, p = this.panel(path);
    const cell = p.content.widgets[index];
    if (!cell) throw new Error(`no cell ${index} in ${path}`);
    this._remember(path, [[index, cell]]);
    app.shell.activateById(p.id);
    p.content.activeCellIndex = index;
    p.content.deselectAll();
    void app.commands.execute('notebook:run-cell');
    return true;
  },

  runAll(path) {
    const app = window.jupyterapp, p = this.panel(path);
    this._remember(path, p.content.widgets.map((c, i) => [i, c]));
    app.shell.activateById(p.id);
    void app.commands.execute('notebook:run-all-cells');
    return true;
  },

  // the cell's execute reply has arrived since we asked to run it (JupyterLab sets the count after
  // the reply and the kernel's idle status, i.e. after every output of that execution)
  cellExecuted(path, index) {
    const p = this.panel(path);
    const cell = p && p.content.widgets[index];
    if (!cell || cell.model.type !== 'code') return false;
    const count = cell.model.executionCount;
    const before = (this.before[path] || {})[index];
    return count !== null && count !== undefined && count !== before;
  },

  allExecuted(path) {
    const p = this.panel(path);
    if (!p) return false;
    return p.content.widgets.every((c, i) => c.model.type !== 'code' || this.cellExecuted(path, i));
  },

  executionCount(path, index) {
    const cell = this.panel(path).content.widgets[index];
    return cell.model.type === 'code' ? cell.model.executionCount : null;
  },

  outputs(path, index) {
    const cell = this.panel(path).content.widgets[index];
    return cell.model.type === 'code' ? cell.model.outputs.toJSON() : [];
  },

  async save(path) {
    const app = window.jupyterapp, p = this.panel(path);
    app.shell.activateById(p.id);
    await app.commands.execute('docmanager:save');
    return !p.context.model.dirty;
  },

  dirty(path) {
    const p = this.panel(path);
    return p ? p.context.model.dirty : null;
  },

  async setTheme(name) {
    await window.jupyterapp.commands.execute('apputils:change-theme', { theme: name });
    return true;
  },

  // Timestamped log (performance.now() ms) of every value `attribute` of the first `selector` element takes,
  // and of every click inside that element: exact transition times without polling.
  watches: {},
  watch(key, selector, attribute) {
    const log = (this.watches[key] = []);
    let last;
    const check = () => {
      const el = document.querySelector(selector);
      const value = el ? el.getAttribute(attribute) : null;
      if (value !== last) {
        last = value;
        log.push({ value, t: performance.now() });
      }
    };
    new MutationObserver(check).observe(document.body,
      { subtree: true, childList: true, attributes: true, attributeFilter: [attribute] });
    document.addEventListener('click', e => {
      const t = e.target;
      if (t instanceof Element && t.closest(selector)) {
        log.push({ click: t.className || t.tagName, t: performance.now() });
      }
    }, true);
    check();
    return true;
  },

  // One execute_request on the notebook's kernel, outside the notebook document (no cell, no history).
  async execute(path, code, timeoutMs) {
    const k = this.kernel(path);
    if (!k) throw new Error(`no kernel for ${path}`);
    const future = k.requestExecute(
      { code, silent: false, store_history: false, allow_stdin: false, stop_on_error: false }, true);
    const out = [];
    let error = null;
    future.onIOPub = msg => {
      const t = msg.header.msg_type, c = msg.content;
      if (t === 'stream') out.push(c.text);
      else if (t === 'execute_result' || t === 'display_data') out.push((c.data || {})['text/plain'] || '');
      else if (t === 'error') error = { ename: c.ename, evalue: c.evalue, traceback: c.traceback.join('\n') };
    };
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
    });
    try {
      const reply = await Promise.race([future.done, timeout]);
      return { text: out.join(''), error, status: reply.content.status };
    } catch (e) {
      if (e.message === 'timeout') return { text: out.join(''), error: null, status: 'timeout' };
      throw e;
    } finally {
      clearTimeout(timer);
    }
  },
};

// Applies the remembered theme before the first paint. A classic, blocking script (the CSP
// forbids inline ones) that only reads the copy of the user's preference kept in
// localStorage: no request, a few microseconds.
//
// <html data-theme-choice> holds the choice (light, dark or auto) and <html data-theme> the
// colours in use (light or dark), so the stylesheet needs one dark block. The app calls
// window.tidingsTheme.set(choice) when the preference changes.
(function () {
  var root = document.documentElement;
  var system = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;

  function resolve(choice) {
    if (choice === 'light' || choice === 'dark') return choice;
    return system && system.matches ? 'dark' : 'light';
  }

  // The browser's and the installed app's title bar: the brand's colour in light, the page's
  // own in dark (app.css's --bg), so that it follows the theme in use, not only the system's.
  var bar = document.querySelector('meta[name=theme-color]');

  function apply(choice) {
    if (choice !== 'light' && choice !== 'dark') choice = 'auto';
    root.setAttribute('data-theme-choice', choice);
    root.setAttribute('data-theme', resolve(choice));
    if (bar) bar.content = resolve(choice) === 'dark' ? '#121418' : '#c2410c';
    return choice;
  }

  var stored = 'auto';
  try {
    stored = localStorage.getItem('tidings.theme') || 'auto';
  } catch (e) {
    // Storage may be disabled; following the system is the right fallback.
  }
  apply(stored);

  if (system && system.addEventListener) {
    system.addEventListener('change', function () {
      apply(root.getAttribute('data-theme-choice'));
    });
  }

  window.tidingsTheme = {
    set: function (choice) {
      choice = apply(choice);
      try {
        localStorage.setItem('tidings.theme', choice);
      } catch (e) {
        // Without storage the theme still follows the preference once the app has loaded.
      }
    },
  };
})();

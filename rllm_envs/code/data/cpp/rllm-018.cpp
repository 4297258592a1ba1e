#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n;
    std::cin >> n;
    std::vector<std::string> keys;
    keys.reserve(n);
    std::string w;
    while (std::cin >> w) {
        std::sort(w.begin(), w.end());
        keys.push_back(w);
    }
    std::sort(keys.begin(), keys.end());
    auto distinct = std::unique(keys.begin(), keys.end()) - keys.begin();
    std::cout << distinct << '\n';
    return 0;
}
